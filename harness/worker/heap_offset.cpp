#include "worker/heap_offset.h"

#include <cstdlib>
#include <random>
#include <string>

namespace tunebench::worker {

namespace {
HeapOffset heap_offset_made;  // this process's
}  // namespace

const HeapOffset& randomize_heap_offset() {
  if (heap_offset_made.bytes != 0) return heap_offset_made;
  size_t bytes = 0;
  if (const char* chosen = std::getenv(kHeapOffsetVariable); chosen != nullptr) {
    bytes = heap_offset_from(chosen);
  }
  if (bytes == 0) bytes = draw_heap_offset();
  // Kept for the life of the process: freeing it would hand the space to the next allocations.
  static volatile char* const pad = static_cast<char*>(std::malloc(bytes));
  if (pad == nullptr) return heap_offset_made;
  pad[0] = 1;
  heap_offset_made.bytes = bytes;
  return heap_offset_made;
}

const HeapOffset& heap_offset() { return heap_offset_made; }

size_t draw_heap_offset() {
  static std::mt19937_64 draws{std::random_device{}()};
  return 16 * (1 + size_t(draws() % (kMostHeapOffset / 16)));
}

size_t heap_offset_from(const std::string& text) {
  if (text.empty() || text.size() > 5) return 0;
  size_t bytes = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return 0;
    bytes = bytes * 10 + size_t(c - '0');
  }
  return bytes >= 16 && bytes <= kMostHeapOffset && bytes % 16 == 0 ? bytes : 0;
}

}  // namespace tunebench::worker
