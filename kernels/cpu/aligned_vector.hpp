#pragma once
// std::vector whose storage starts on a cache line. SIMD kernels may split a sum differently
// depending on where a buffer starts; one fixed alignment for every scratch buffer keeps results
// bitwise the same whichever worker computes them, and keeps vector loads aligned.

#include <cstddef>
#include <new>
#include <vector>

namespace svdserve {

inline constexpr std::size_t kCacheLineBytes = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;

  CacheLineAllocator() noexcept = default;
  template <class U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  [[nodiscard]] T* allocate(std::size_t count) {
    return static_cast<T*>(::operator new (count * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* pointer, std::size_t) noexcept {
    ::operator delete (pointer, std::align_val_t{kCacheLineBytes});
  }

  template <class U>
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator<U>&) noexcept {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace svdserve
