#!/bin/sh
# Prints this user's Loom inboxes in /dev/shm whose owning process is gone
# (exited or a zombie): what a crash or a missed clean-up leaves behind.
# Inboxes of live processes (another test running at the same time) are
# in use and not listed. The owner's pid is the int32 at byte 32 of the
# inbox header (src/transport/shm/layout.hpp).
for f in /dev/shm/loom-"$(id -u)"-*; do
    [ -e "$f" ] || continue
    pid=$(od -An -t d4 -j 32 -N 4 "$f" 2>/dev/null | tr -d ' ')
    [ -n "$pid" ] && [ "$pid" -gt 0 ] || continue
    state=$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$pid/stat" 2>/dev/null)
    case $state in ''|Z|X) basename "$f" ;; esac
done
