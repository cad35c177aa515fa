#include "transport/shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace loom {
namespace {

Status os_error(const std::string &what, const std::string &name) {
    return fail(LOOM_ERR_TRANSPORT, what + " of shared-memory segment " + name + " failed: " + std::strerror(errno));
}

// MAP_POPULATE: page faults happen here, when a communicator is set up or a
// peer first mapped, not one per ring cell inside the first collectives,
// where they slowed a program's first calls (docs/design.md, "The
// shared-memory path").
Status map_fd(int fd, size_t bytes, const std::string &name, unsigned char **out) {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) return os_error("mmap", name);
    *out = static_cast<unsigned char *>(p);
    return LOOM_SUCCESS;
}

}  // namespace

SharedSegment::~SharedSegment() {
    if (data_) munmap(data_, bytes_);
    if (fd_ >= 0) close(fd_);
    // A segment whose peers never all attached is still named: the creator
    // removes it when it goes away.
    unlink();
}

Status SharedSegment::create(const std::string &name, size_t bytes, std::unique_ptr<SharedSegment> *out) {
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
        shm_unlink(name.c_str());
        fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    }
    if (fd < 0) return os_error("shm_open (create)", name);
    std::unique_ptr<SharedSegment> seg(new SharedSegment());
    seg->name_ = name;
    seg->named_ = true;
    seg->bytes_ = bytes;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
        Status st = os_error("ftruncate to " + std::to_string(bytes) + " bytes (is /dev/shm full?)", name);
        close(fd);
        return st;
    }
    // Reserve the pages now: a full /dev/shm is then an error here, not a
    // SIGBUS at the first write into a ring.
    if (const int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes))) {
        errno = err;
        Status st = os_error("reserving " + std::to_string(bytes) + " bytes (is /dev/shm full?)", name);
        close(fd);
        return st;
    }
    Status st = map_fd(fd, bytes, name, &seg->data_);
    close(fd);
    if (st != LOOM_SUCCESS) return st;
    *out = std::move(seg);
    return LOOM_SUCCESS;
}

Status SharedSegment::open(const std::string &name, std::unique_ptr<SharedSegment> *out) {
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) return os_error("shm_open", name);
    struct stat st_buf;
    if (fstat(fd, &st_buf) != 0) {
        Status st = os_error("fstat", name);
        close(fd);
        return st;
    }
    std::unique_ptr<SharedSegment> seg(new SharedSegment());
    seg->name_ = name;
    seg->bytes_ = static_cast<size_t>(st_buf.st_size);
    Status st = map_fd(fd, seg->bytes_, name, &seg->data_);
    close(fd);
    if (st != LOOM_SUCCESS) return st;
    *out = std::move(seg);
    return LOOM_SUCCESS;
}

std::unique_ptr<SharedSegment> SharedSegment::anonymous(size_t bytes) {
    const int fd = memfd_create("loom-test", 0);
    if (fd < 0) return nullptr;
    std::unique_ptr<SharedSegment> seg(new SharedSegment());
    seg->fd_ = fd;
    seg->name_ = "(anonymous)";
    seg->bytes_ = bytes;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 || map_fd(fd, bytes, seg->name_, &seg->data_) != LOOM_SUCCESS)
        return nullptr;
    return seg;
}

std::unique_ptr<SharedSegment> SharedSegment::another_mapping() const {
    if (fd_ < 0) return nullptr;
    std::unique_ptr<SharedSegment> seg(new SharedSegment());
    seg->fd_ = dup(fd_);
    seg->name_ = name_;
    seg->bytes_ = bytes_;
    if (seg->fd_ < 0 || map_fd(seg->fd_, bytes_, name_, &seg->data_) != LOOM_SUCCESS) return nullptr;
    return seg;
}

void SharedSegment::unlink() {
    if (!named_) return;
    shm_unlink(name_.c_str());
    named_ = false;
}

}  // namespace loom
