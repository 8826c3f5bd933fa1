/**
 * Keeps glibc from handing the read buffers' pages back to the kernel between answers.
 *
 * Node reads a pipe or a socket into a freshly `malloc`ed 64 KiB buffer per read; the buffers of
 * large answers (a 100 KB answer is two reads) live until V8's next young-generation collection,
 * which frees them together — megabytes at a time. glibc's `free` gives the top of its heap back
 * to the kernel whenever more than its trim threshold (128 KiB at start) is free there, so the
 * next reads grow the heap again and fault its pages in anew: measured here (2 cores, a VM) at ~8
 * page faults and ~150 µs of client CPU per 100 KB answer — 40 % of what such an answer cost, and
 * what kept Skald's 100 KB results at 0.66–0.9× the raw client's MB/s (docs/performance.md, issue
 * 28's round five).
 *
 * glibc raises that threshold by itself, to twice the size of the largest `mmap`ed block freed so
 * far (its dynamic mmap threshold), which a long-running process reaches sooner or later. This
 * reaches it at once: one 8 MiB block, never written (so never resident), let go at a
 * transport's first start and freed at V8's next collection — from then on the threshold is 16
 * MiB, above what the read buffers of one young generation (16 MiB semi-spaces at most) amount
 * to. 2 MiB measured no better than nothing; 32 MiB is past the largest block glibc adjusts to.
 * What it costs: up to 16 MiB of freed heap stays mapped, and blocks of 128 KiB–8 MiB come from
 * the heap instead of their own mappings. Elsewhere (musl, macOS, Windows) the block is freed and
 * nothing else happens.
 */

let done = false

/** Once per process, at a transport's first start. */
export const once = (): void => {
  if (done) return
  done = true
  try {
    Buffer.allocUnsafeSlow(8 * 1024 * 1024)
  } catch {
    // No address space to spare (a strict overcommit policy): nothing to gain, and nothing lost.
  }
}
