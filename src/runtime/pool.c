/* src/runtime/pool.c: the persistent thread pool of the executor. One job at
 * a time: the owner publishes (job, arg, want) under the lock and bumps a
 * generation; workers wake (a short spin, then a condition variable), enter
 * the job unless the owner has closed it, run their part, and the last one
 * to leave a closed job signals the owner. The owner closes the job when its
 * own part returns: a worker the OS has not scheduled by then skips the job
 * instead of holding up the owner (on a loaded machine a woken worker can
 * wait milliseconds for a CPU). Workers take the owner's floating-point
 * environment minus FTZ/DAZ with each job. */
#include <stdatomic.h>
#include <pthread.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FT_HAVE_MXCSR 1
#endif

#include "runtime/exec.h"

/* Spin iterations before sleeping; only when workers do not outnumber CPUs. */
enum { SPIN_WORKER = 4000, SPIN_OWNER = 4000 };
#define JOB_CLOSED ((uint64_t)1 << 31)
#define JOB_COUNT (JOB_CLOSED - 1)
#define JOB_GEN(g) (((uint64_t)(g) & 0xffffffffu) << 32)

typedef struct worker {
  struct ft_pool *pool;
  int tid;
  pthread_t th;
} worker;

struct ft_pool {
  int n;                  /* participants (workers + the owner) */
  bool spin;
  worker *w;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  atomic_bool busy;       /* a job owner holds the pool */
  atomic_uint_fast64_t gen;
  ft_pool_job job;
  void *arg;
  int want;
  unsigned csr;
  /* The current job's entry word: its generation (low 32 bits) in the high
   * 32 bits, JOB_CLOSED, and the count of workers inside (below). */
  atomic_uint_fast64_t inside;
  bool stop;
  /* shared pools */
  int refs;
  struct ft_pool *next_shared;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

unsigned ft_fp_env_enter(void) {
#ifdef FT_HAVE_MXCSR
  unsigned old = _mm_getcsr();
  unsigned want = old & ~(0x8000u | 0x0040u); /* FTZ (bit 15), DAZ (bit 6) */
  if (want != old) _mm_setcsr(want);
  return old;
#else
  return 0;
#endif
}

void ft_fp_env_leave(unsigned saved) {
#ifdef FT_HAVE_MXCSR
  if (_mm_getcsr() != saved) _mm_setcsr(saved);
#else
  (void)saved;
#endif
}

int ft_pool_default_threads(const ft_ctx_options *opts) {
  int n = opts ? opts->num_threads : 0;
  if (n <= 0) {
    const char *e = getenv("FT_NUM_THREADS");
    if (e && *e) {
      char *end;
      long v = strtol(e, &end, 10);
      if (*end == 0 && v > 0) n = v > FT_POOL_MAX_THREADS ? FT_POOL_MAX_THREADS : (int)v;
    }
  }
  if (n <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int)(c > FT_POOL_MAX_THREADS ? FT_POOL_MAX_THREADS : c) : 1;
  }
  return n > FT_POOL_MAX_THREADS ? FT_POOL_MAX_THREADS : n;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  ft_pool *p = w->pool;
  ft_fp_env_enter();
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = atomic_load_explicit(&p->gen, memory_order_acquire);
    for (int i = 0; p->spin && g == seen && i < SPIN_WORKER; i++) {
      cpu_relax();
      g = atomic_load_explicit(&p->gen, memory_order_acquire);
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->gen, memory_order_acquire) == seen && !p->stop)
      pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop) {
      pthread_mutex_unlock(&p->mu);
      break;
    }
    /* A participant of generation g cannot miss it: the next generation is
     * only published once every participant of this one has finished. */
    seen = atomic_load_explicit(&p->gen, memory_order_acquire);
    ft_pool_job job = p->job;
    void *jarg = p->arg;
    int want = p->want;
    unsigned csr = p->csr;
    pthread_mutex_unlock(&p->mu);
    if (w->tid >= want) continue;
    /* Enter generation `seen` unless its owner has closed it (or moved on). */
    uint64_t v = atomic_load_explicit(&p->inside, memory_order_acquire);
    bool entered = false;
    while (!entered && (v & ~(JOB_CLOSED | JOB_COUNT)) == JOB_GEN(seen) && !(v & JOB_CLOSED))
      entered = atomic_compare_exchange_weak_explicit(&p->inside, &v, v + 1, memory_order_acq_rel,
                                                      memory_order_acquire);
    if (!entered) continue;
#ifdef FT_HAVE_MXCSR
    if (_mm_getcsr() != csr) _mm_setcsr(csr);
#else
    (void)csr;
#endif
    job(jarg, w->tid);
    v = atomic_fetch_sub_explicit(&p->inside, 1, memory_order_acq_rel) - 1;
    if ((v & JOB_CLOSED) && !(v & JOB_COUNT)) { /* the last one out of a closed job */
      pthread_mutex_lock(&p->mu);
      pthread_cond_broadcast(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

/* Stops and joins the first `started` workers. */
static void stop_workers(ft_pool *p, int started) {
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < started; i++) pthread_join(p->w[i].th, NULL);
}

ft_pool *ft_pool_new(int n) {
  if (n < 1) n = 1;
  if (n > FT_POOL_MAX_THREADS) n = FT_POOL_MAX_THREADS;
  ft_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = n;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  p->spin = cpus > 0 && n <= cpus;
  atomic_init(&p->busy, false);
  atomic_init(&p->gen, 0);
  atomic_init(&p->inside, JOB_CLOSED);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  if (n > 1 && !(p->w = calloc((size_t)n - 1, sizeof *p->w))) goto fail;
  for (int i = 0; i < n - 1; i++) {
    p->w[i].pool = p;
    p->w[i].tid = i + 1;
    if (pthread_create(&p->w[i].th, NULL, worker_main, &p->w[i])) {
      stop_workers(p, i);
      goto fail;
    }
  }
  return p;
fail:
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p->w);
  free(p);
  return NULL;
}

void ft_pool_free(ft_pool *p) {
  if (!p) return;
  stop_workers(p, p->n - 1);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p->w);
  free(p);
}

int ft_pool_size(const ft_pool *p) { return p ? p->n : 1; }

bool ft_pool_try_run(ft_pool *p, int want, ft_pool_job job, void *arg) {
  if (!p || want <= 1 || p->n <= 1) {
    job(arg, 0);
    return true;
  }
  if (want > p->n) want = p->n;
  bool expect = false;
  if (!atomic_compare_exchange_strong_explicit(&p->busy, &expect, true, memory_order_acquire,
                                               memory_order_relaxed))
    return false;
  pthread_mutex_lock(&p->mu);
  p->job = job;
  p->arg = arg;
  p->want = want;
#ifdef FT_HAVE_MXCSR
  p->csr = _mm_getcsr() & ~(0x8000u | 0x0040u);
#endif
  uint64_t g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
  atomic_store_explicit(&p->inside, JOB_GEN(g), memory_order_relaxed); /* open, nobody inside */
  atomic_store_explicit(&p->gen, g, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  job(arg, 0);
  /* Close the job: workers not inside yet skip it. Wait for those inside. */
  uint64_t v = atomic_fetch_or_explicit(&p->inside, JOB_CLOSED, memory_order_acq_rel);
  for (int i = 0; p->spin && (v & JOB_COUNT) && i < SPIN_OWNER; i++) {
    cpu_relax();
    v = atomic_load_explicit(&p->inside, memory_order_acquire);
  }
  if (v & JOB_COUNT) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->inside, memory_order_acquire) & JOB_COUNT)
      pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  atomic_store_explicit(&p->busy, false, memory_order_release);
  return true;
}

/* ------------------------------------------------------------ shared pools */
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static ft_pool *shared_list;

ft_pool *ft_pool_acquire_shared(int n) {
  if (n < 1) n = 1;
  if (n > FT_POOL_MAX_THREADS) n = FT_POOL_MAX_THREADS;
  pthread_mutex_lock(&shared_mu);
  ft_pool *p = shared_list;
  while (p && p->n != n) p = p->next_shared;
  if (!p && (p = ft_pool_new(n))) {
    p->next_shared = shared_list;
    shared_list = p;
  }
  if (p) p->refs++;
  pthread_mutex_unlock(&shared_mu);
  return p;
}

void ft_pool_release_shared(ft_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&shared_mu);
  bool last = --p->refs == 0;
  if (last) {
    ft_pool **at = &shared_list;
    while (*at != p) at = &(*at)->next_shared;
    *at = p->next_shared;
  }
  pthread_mutex_unlock(&shared_mu);
  if (last) ft_pool_free(p);
}
