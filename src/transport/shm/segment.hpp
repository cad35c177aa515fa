// POSIX shared-memory segments (shm_open + mmap) for the intra-node path. A
// segment has a name only until every peer has mapped it: the creator then
// unlinks it, so a crash afterwards leaves nothing in /dev/shm.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "core/status.hpp"

namespace loom {

class SharedSegment {
  public:
    ~SharedSegment();
    SharedSegment(const SharedSegment &) = delete;
    SharedSegment &operator=(const SharedSegment &) = delete;

    // Creates `name` ("/loom-..."), sized and zero-filled. A leftover of the
    // same name (a crashed run) is replaced.
    static Status create(const std::string &name, size_t bytes, std::unique_ptr<SharedSegment> *out);
    // Maps an existing segment created by a peer.
    static Status open(const std::string &name, std::unique_ptr<SharedSegment> *out);
    // Nameless memory (memfd) for tests that run ranks as threads: each
    // peer gets its own mapping through another_mapping(), as processes do.
    static std::unique_ptr<SharedSegment> anonymous(size_t bytes);
    std::unique_ptr<SharedSegment> another_mapping() const;

    unsigned char *data() const { return data_; }
    size_t size() const { return bytes_; }
    const std::string &name() const { return name_; }
    // Removes the name (idempotent); mappings stay valid.
    void unlink();
    // True while this segment's creator has not removed its name.
    bool named() const { return named_; }

  private:
    SharedSegment() = default;
    unsigned char *data_ = nullptr;
    size_t bytes_ = 0;
    std::string name_;
    bool named_ = false;
    int fd_ = -1;  // kept only by anonymous segments
};

}  // namespace loom
