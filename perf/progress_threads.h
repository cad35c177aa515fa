/* This process's threads named "loom-progress" (Loom's progress thread, as
 * /proc/self/task/TID/comm shows it): how many there are and, if cpu_seconds
 * is not NULL, the CPU time (user + system) they have used. -1 when /proc
 * cannot be read. For tests/mpi/test_progress_thread and perf/progress_idle. */
#ifndef LOOM_PERF_PROGRESS_THREADS_H
#define LOOM_PERF_PROGRESS_THREADS_H
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int loom_progress_threads(double *cpu_seconds) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    double total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        const int ours = fgets(name, sizeof name, f) && !strncmp(name, "loom-progress", 13);
        fclose(f);
        if (!ours) continue;
        ++n;
        if (!cpu_seconds) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (!f) continue;
        char line[1024];
        if (fgets(line, sizeof line, f)) {
            const char *p = strrchr(line, ')');
            unsigned long utime = 0, stime = 0;
            /* fields 14 and 15 (utime, stime), counted from the state, field 3 */
            if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
                total += (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
        }
        fclose(f);
    }
    closedir(d);
    if (cpu_seconds) *cpu_seconds = total;
    return n;
}
#endif
