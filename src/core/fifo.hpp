// A first-in first-out queue on one ring of slots that grows by doubling
// and never shrinks: pushing and popping in steady state allocates nothing
// (std::deque allocates a block each time the queue walks past one).
// Erasing from the middle keeps the others' order.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace loom {

template <typename T>
class Fifo {
  public:
    class iterator {
      public:
        iterator(Fifo *q, size_t i) : q_(q), i_(i) {}
        T &operator*() const { return q_->at(i_); }
        T *operator->() const { return &q_->at(i_); }
        iterator &operator++() {
            ++i_;
            return *this;
        }
        bool operator==(const iterator &o) const { return i_ == o.i_; }
        bool operator!=(const iterator &o) const { return i_ != o.i_; }

      private:
        friend class Fifo;
        Fifo *q_;
        size_t i_;  // position from the front
    };

    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    T &front() { return slots_[head_]; }
    T &at(size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    iterator begin() { return iterator(this, 0); }
    iterator end() { return iterator(this, size_); }

    void reserve(size_t n) {
        if (n > slots_.size()) grow(n);
    }
    void push_back(T v) {
        if (size_ == slots_.size()) grow(size_ + 1);
        slots_[(head_ + size_) & (slots_.size() - 1)] = std::move(v);
        ++size_;
    }
    template <typename... A>
    void emplace_back(A &&...a) {
        push_back(T(std::forward<A>(a)...));
    }
    void pop_front() {
        slots_[head_] = T();
        head_ = (head_ + 1) & (slots_.size() - 1);
        --size_;
    }
    // Removes the element at `it`; the ones after it move up one place.
    void erase(iterator it) {
        for (size_t i = it.i_; i + 1 < size_; ++i) at(i) = std::move(at(i + 1));
        at(size_ - 1) = T();
        --size_;
    }

  private:
    void grow(size_t need) {
        size_t cap = slots_.empty() ? 8 : slots_.size();
        while (cap < need) cap *= 2;
        std::vector<T> next(cap);
        for (size_t i = 0; i < size_; ++i) next[i] = std::move(at(i));
        slots_.swap(next);
        head_ = 0;
    }
    std::vector<T> slots_;  // a power of two in size
    size_t head_ = 0, size_ = 0;
};

}  // namespace loom
