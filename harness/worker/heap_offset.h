// Every worker process starts its heap at a random offset. glibc's heap begins on a page the
// kernel chooses at random, but where each allocation falls inside a page follows from the
// allocations before it: the same in every process that makes the same requests (a tiny model's
// first parameter lay 2688 bytes into its page in every process), and shifted by anything that
// differs between two arms' processes, such as the request a worker reads. Positions inside a
// page decide cache-set and 4K-aliasing conflicts between buffers, so such a shift is a fixed bias
// of an arm that pairing cannot remove (stage 2's A/As of two identical builds leaned 1-2 % one
// way or the other per benchmark, and flipped with which arm was called "self"). A random first
// allocation of 16 B - 64 KiB (16-byte steps, glibc's alignment; 64 KiB spans the L1 and L2 set
// periods) makes the layout a fresh draw in every process: the bias becomes process-to-process
// noise that the interval carries and more pairs average out (Curtsinger and Berger's
// Stabilizer randomises layout for the same reason; this is only the heap's start).
//
// A resident pair's two processes (run/resident.h) are given one offset, drawn afresh for every
// pair, through kHeapOffsetVariable: the layout still varies from pair to pair, but the two arms
// of a pair share it, so what the layout does to a process's speed is common to both and cancels
// in the pair's ratio instead of adding to its noise (common random numbers).
#pragma once

#include <cstddef>
#include <string>

namespace tunebench::worker {

// The environment variable that chooses the offset: 16-65536 bytes in steps of 16, written in
// five digits (leading zeros) so that both arms' environments have the same size whatever the
// draw. Anything else there is ignored and the worker draws its own.
inline constexpr const char* kHeapOffsetVariable = "TUNEBENCH_HEAP_OFFSET";
inline constexpr size_t kMostHeapOffset = 65536;

// A random offset: 16 B - 64 KiB in steps of 16.
size_t draw_heap_offset();

// `bytes` in kHeapOffsetVariable's form.
inline std::string heap_offset_text(size_t bytes) {
  std::string text = std::to_string(bytes);
  return std::string(text.size() < 5 ? 5 - text.size() : 0, '0') + text;
}

// The offset `text` names (kHeapOffsetVariable's form), or 0 where it names none.
size_t heap_offset_from(const std::string& text);

struct HeapOffset {
  size_t bytes = 0;  // the random allocation made first (0: none made)
};

// Makes the first allocation (once per process; later calls change nothing), of the size
// kHeapOffsetVariable names or else a random one, and returns what it did.
const HeapOffset& randomize_heap_offset();

// What randomize_heap_offset() did in this process (bytes 0 before it ran).
const HeapOffset& heap_offset();

}  // namespace tunebench::worker
