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
#pragma once

#include <cstddef>

namespace tunebench::worker {

struct HeapOffset {
  size_t bytes = 0;  // the random allocation made first (0: none made)
};

// Makes the random first allocation (once per process; later calls change nothing) and returns
// what it did.
const HeapOffset& randomize_heap_offset();

// What randomize_heap_offset() did in this process (bytes 0 before it ran).
const HeapOffset& heap_offset();

}  // namespace tunebench::worker
