/* src/runtime/exec.h: the executor's internal header (DESIGN.md §7, §10).
 *
 * A second internal header for src/runtime, on purpose: the executor is a
 * generic layer (a thread pool, a DAG of chunked tasks, a static buffer
 * planner) that depends on nothing of the interpreter, so tests and benches
 * use it without runtime.h, and src/lower drives it through this header
 * alone. Sections follow the files:
 *   pool.c          the persistent pthread pool (shared pools by size)
 *   exec.c          the dependency-wave executor, frames, profiling
 *   bufplan.c       the static buffer plan (liveness -> arena offsets) and its validator
 * Running an ft_program through the executor (exec_program.c) and profiling
 * (exec_profile.c) are src/lower's: lower.h (issue 23: runtime never
 * includes lower).
 * docs/executor.md explains the design and the determinism argument. */
#ifndef FT_EXEC_H
#define FT_EXEC_H

#include "ir/ir.h"

/* ================================================================= pool.c */
/* A pool of n participants: the thread that runs a job is participant 0 and
 * n - 1 persistent workers are the others. Idle workers sleep on a condition
 * variable (after a short spin when the pool does not oversubscribe the
 * CPUs). Every worker runs with the MXCSR of the caller of each job, with
 * flush-to-zero and denormals-are-zero cleared, so a kernel gives the same
 * bits on every thread and as the interpreter does. */
typedef struct ft_pool ft_pool;

enum { FT_POOL_MAX_THREADS = 256 };

/* The thread count a context asks for: opts->num_threads when > 0, else
 * FT_NUM_THREADS from the environment when it is a positive integer, else
 * the number of online CPUs; clamped to [1, FT_POOL_MAX_THREADS]. opts may
 * be NULL. */
int ft_pool_default_threads(const ft_ctx_options *opts);

/* A new pool of n participants (n - 1 threads started). NULL when a thread
 * or memory could not be had (nothing is left running). Free with
 * ft_pool_free, which wakes and joins every worker. */
ft_pool *ft_pool_new(int n);
void ft_pool_free(ft_pool *p);
int ft_pool_size(const ft_pool *p);

/* A process-wide pool of n participants, shared by reference count: created
 * on first use, joined when the last reference is released. NULL on failure. */
ft_pool *ft_pool_acquire_shared(int n);
void ft_pool_release_shared(ft_pool *p);

/* One job: job(arg, tid) for tid in [0, want). */
typedef void (*ft_pool_job)(void *arg, int tid);

/* Runs job on the calling thread (tid 0) and on up to want - 1 workers
 * (want is clamped to the pool size): each of those that wakes before the
 * caller's own job(arg, 0) returns runs job(arg, tid); a later one skips
 * it, so a worker the OS has not scheduled never holds up the caller. Jobs
 * must therefore share their work dynamically (as the executor's chunk
 * counter does). Returns when every worker that entered has returned. A
 * pool runs one job at a time: when another thread's job holds
 * it, this returns false at once without running anything (the caller then
 * does the work itself; the executor's results do not depend on who runs
 * what). want <= 1 runs job(arg, 0) inline and returns true. */
bool ft_pool_try_run(ft_pool *p, int want, ft_pool_job job, void *arg);

/* Clears FTZ and DAZ in this thread's MXCSR (x86); returns the old value so
 * the caller can restore it (0 elsewhere). */
unsigned ft_fp_env_enter(void);
void ft_fp_env_leave(unsigned saved);

/* ================================================================= exec.c */
typedef struct ft_exec ft_exec;
typedef struct ft_exec_frame ft_exec_frame;
/* What a task callback sees: the frame of this call and the thread. */
typedef struct ft_exec_call ft_exec_call;
typedef struct ft_exec_profile ft_exec_profile;

/* Runs chunk [lo, hi) of a task. Returns FT_OK, or a status after (ideally)
 * ft_exec_fail for the message. Chunks of one task may run concurrently on
 * different threads: a callback writes only its own chunk's part of its
 * outputs. */
typedef ft_status (*ft_exec_task_fn)(ft_exec_call *call, void *task_user, int64_t lo, int64_t hi);

typedef struct ft_exec_task {
  const char *name;       /* copied; for errors and profiles */
  ft_exec_task_fn fn;
  void *user;             /* borrowed; passed to fn */
  int64_t extent;         /* the range [0, extent) of lo..hi; 0: the task does nothing */
  int64_t grain;          /* chunk length (> 0), or 0: one chunk. It must be chosen from
                           * the task's shape alone (ft_exec_grain), never from a
                           * thread count: that is the determinism contract. */
  int n_deps;
  const int *deps;        /* tasks that must finish first (any order; no cycles) */
  uint64_t bytes;         /* bytes the task reads and writes (for --stats; may be 0) */
  uint64_t cost;          /* work estimate (e.g. elements); 0: unknown (large). A wave
                           * whose tasks all have a known cost summing to less than
                           * FT_EXEC_CHUNK_WORK runs on the calling thread alone:
                           * waking workers would cost more than the work. */
} ft_exec_task;

typedef struct ft_exec_options {
  ft_pool *pool;          /* borrowed, outlives the executor; NULL: run on the caller */
  size_t arena_bytes;     /* each frame's arena (64-aligned) */
  size_t scratch_bytes;   /* each frame's scratch for the caller (e.g. buffer tables) */
  int max_frames;         /* concurrent calls before callers wait; 0: 8 */
  bool frame_ctx;         /* give each (frame, thread) its own ft_ctx (ft_exec_call_ctx) */
  bool no_small_waves;    /* always share a wave of several chunks with the pool: never run
                           * it on the caller alone for its small cost or because it ran
                           * faster alone lately (tests: exercise the threads) */
} ft_exec_options;

/* The chunk length for a range of `extent` items of `work` units each
 * (elements, flops): chunks of about FT_EXEC_CHUNK_WORK units, at most
 * FT_EXEC_MAX_CHUNKS of them. A function of the shape only. */
enum { FT_EXEC_CHUNK_WORK = 1 << 15, FT_EXEC_MAX_CHUNKS = 256 };
int64_t ft_exec_grain(int64_t extent, int64_t work);

/* Builds an executor over a DAG of n tasks: waves are the tasks' depths
 * (a task runs in the wave after its deepest dependency). NULL + error on
 * ctx on a bad task (cycle, bad dep, grain < 0) or when memory is
 * exhausted. Free with ft_exec_free (no call may be running). */
ft_exec *ft_exec_new(ft_ctx *ctx, int n, const ft_exec_task *tasks, const ft_exec_options *opts);
void ft_exec_free(ft_exec *x);

int ft_exec_num_tasks(const ft_exec *x);
int ft_exec_num_waves(const ft_exec *x);
int ft_exec_task_wave(const ft_exec *x, int task);
int64_t ft_exec_task_chunks(const ft_exec *x, int task);
const char *ft_exec_task_name(const ft_exec *x, int task);

/* Frames: the per-call state (arena, scratch, counters, per-thread views).
 * A call takes a frame from the executor's free list; when none is free and
 * max_frames exist, it waits for one. Frames are made on first need and
 * kept, so steady-state calls allocate nothing. NULL + error on ctx when
 * memory for a new frame is exhausted. */
ft_exec_frame *ft_exec_acquire(ft_exec *x, ft_ctx *ctx);
void ft_exec_release(ft_exec *x, ft_exec_frame *f);
/* Makes n frames now (so that even first calls do not allocate). */
ft_status ft_exec_reserve(ft_exec *x, ft_ctx *ctx, int n);
void *ft_exec_frame_arena(ft_exec_frame *f);
void *ft_exec_frame_scratch(ft_exec_frame *f);

/* Runs every task once, wave by wave, on the pool. user is passed through
 * (ft_exec_call_user). prof (may be NULL) records this run. On a task
 * failure, the run stops after the chunks already started finish; the
 * message on ctx names the task ("task 'name' (#i, wave w): ..."); the
 * frame and executor stay usable. ctx may be shared by concurrent callers
 * only if none fails. */
ft_status ft_exec_run_frame(ft_exec *x, ft_exec_frame *f, ft_ctx *ctx, void *user,
                            ft_exec_profile *prof);
/* acquire + run_frame + release. */
ft_status ft_exec_run(ft_exec *x, ft_ctx *ctx, void *user, ft_exec_profile *prof);

/* In a task callback. */
void *ft_exec_call_user(const ft_exec_call *c);
void *ft_exec_call_arena(const ft_exec_call *c);
void *ft_exec_call_scratch(const ft_exec_call *c);
int ft_exec_call_thread(const ft_exec_call *c);
/* This thread's own context of the frame (options.frame_ctx), else NULL. */
ft_ctx *ft_exec_call_ctx(const ft_exec_call *c);
/* Records the failure message of the running chunk; returns st. */
ft_status ft_exec_fail(ft_exec_call *c, ft_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Profiles: the last run's chunks (start, duration, thread, wave) and, over
 * every run recorded, per-task totals. One profile per calling thread.
 * NULL when memory is exhausted; free with ft_exec_profile_free. */
ft_exec_profile *ft_exec_profile_new(const ft_exec *x);
void ft_exec_profile_free(ft_exec_profile *p);
void ft_exec_profile_reset(ft_exec_profile *p);
typedef struct ft_exec_task_stats {
  int64_t runs;
  double total_ms, min_ms, max_ms;   /* busy time of the task's chunks per run */
  uint64_t bytes;
} ft_exec_task_stats;
ft_status ft_exec_profile_task(const ft_exec_profile *p, int task, ft_exec_task_stats *out);
/* The last recorded run as Chrome trace JSON (chrome://tracing, Perfetto):
 * one complete event per chunk, on its thread, with the task, wave and
 * chunk in args. NULL when nothing was recorded or memory is exhausted;
 * malloc'd, free with free(). */
char *ft_exec_profile_json(const ft_exec_profile *p);
/* Per-task totals as a text table (ftc --stats). malloc'd, free with free(). */
char *ft_exec_stats_table(const ft_exec_profile *p);

/* ============================================================== bufplan.c */
/* One buffer to place. Its live interval [first, last] is in the caller's
 * time unit (a task index in a sequential order, or a wave), inclusive.
 * Buffers whose intervals intersect get disjoint memory, except that a
 * buffer may take over the memory of its inplace_of buffer when that one
 * dies exactly where it is born (inplace_of.last == first), as an
 * elementwise step may overwrite an input it is the last reader of. The
 * caller promises such a pair is safe; the planner takes the offer only
 * when it is consistent (one taker per buffer, chains ordered in time). */
typedef struct ft_bufplan_buf {
  size_t size;
  size_t align;           /* a power of two; 0: 64 */
  int first, last;
  int inplace_of;         /* -1: none */
  size_t offset;          /* out */
  bool inplace;           /* out: the offer was taken */
} ft_bufplan_buf;

typedef struct ft_bufplan_stats {
  size_t peak;            /* the arena size the plan needs */
  size_t sum;             /* every buffer apart */
  size_t lower_bound;     /* the most bytes live at one time (after in-place merges) */
  int n_inplace;
} ft_bufplan_stats;

/* Assigns offsets (greedy by size, best-fit gaps among time-overlapping
 * buffers). Deterministic. Allocates only while it runs. */
ft_status ft_bufplan_solve(ft_ctx *ctx, int n, ft_bufplan_buf *bufs, ft_bufplan_stats *stats);
/* Checks a plan: alignment, bounds (arena bytes), and that no two buffers
 * live at one time overlap in memory unless they form a taken in-place pair
 * at the same offset. false with a reason in why (may be NULL). */
bool ft_bufplan_validate(int n, const ft_bufplan_buf *bufs, size_t arena, char *why, size_t n_why);

#endif /* FT_EXEC_H */
