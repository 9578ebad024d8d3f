#include "worker/heap_offset.h"

#include <cstdlib>
#include <random>

namespace tunebench::worker {

namespace {
HeapOffset heap_offset_made;  // this process's
}  // namespace

const HeapOffset& randomize_heap_offset() {
  if (heap_offset_made.bytes != 0) return heap_offset_made;
  std::random_device entropy;
  const size_t bytes = 16 * (1 + size_t(entropy() % 4096));
  // Kept for the life of the process: freeing it would hand the space to the next allocations.
  static volatile char* const pad = static_cast<char*>(std::malloc(bytes));
  if (pad == nullptr) return heap_offset_made;
  pad[0] = 1;
  heap_offset_made.bytes = bytes;
  return heap_offset_made;
}

const HeapOffset& heap_offset() { return heap_offset_made; }

}  // namespace tunebench::worker
