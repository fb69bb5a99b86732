/* src/runtime/dist.c: the MPI transport of shard_map (issue 27,
 * docs/spmd.md). A context with a communicator (ft_dist_init) runs each
 * shard_map across the ranks: interp_spmd.c evaluates the rank's block of
 * axis indices and calls ft_dist_exchange for every collective, which
 * allgathers every rank's bytes in rank order (so every rank can reduce in
 * index order, bit-identical to the simulated axis).
 *
 * Every exchange is two collectives: first a fixed-size tag (a sequence
 * number, the body's canonical hash, the equation, the primitive, the
 * payload size) that every rank compares with every other rank's, then the
 * payload. All ranks see all tags, so a mismatch (another program, another
 * step, another size) is an error on every rank and the payload phase is
 * skipped: the communicator stays usable, nothing hangs. In hardened mode
 * each phase is a nonblocking collective polled against a deadline; past
 * it the call fails and the communicator is marked unusable (MPI cannot
 * cancel a collective), and ft_dist_shutdown(nonzero) aborts the job.
 *
 * Without MPI (meson -Dmpi=disabled, or libopenmpi-dev absent) the entry
 * points fail with "built without MPI". */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "runtime.h"

#ifdef FT_HAVE_MPI
#include <mpi.h>
#endif

struct ft_dist {
#ifdef FT_HAVE_MPI
  MPI_Comm comm;        /* our duplicate of the caller's communicator */
#endif
  int rank, size;
  uint64_t seq;         /* exchanges so far (the tags carry it) */
  bool broken;          /* a timeout or an MPI error left a collective pending */
  ft_dist_options opts;
  /* One shard_map at a time per communicator (the executor may reach two
   * from two threads: MPI orders collectives per communicator). Two
   * shard_maps met in different orders on different ranks fail the entry
   * check (different body hashes) on every rank. */
  pthread_mutex_t lock;
};

void ft_dist_lock(ft_dist *d) { pthread_mutex_lock(&d->lock); }
void ft_dist_unlock(ft_dist *d) { pthread_mutex_unlock(&d->lock); }

ft_dist *ft_dist_get(const ft_ctx *ctx) {
  if (!ctx) return NULL;
  if (ctx->dist) return ctx->dist;
  return ctx->limits_from ? ctx->limits_from->dist : NULL;
}

bool ft_dist_available(void) {
#ifdef FT_HAVE_MPI
  return true;
#else
  return false;
#endif
}

int ft_dist_rank(const ft_ctx *ctx) {
  const ft_dist *d = ft_dist_get(ctx);
  return d ? d->rank : 0;
}

int ft_dist_size(const ft_ctx *ctx) {
  const ft_dist *d = ft_dist_get(ctx);
  return d ? d->size : 1;
}

bool ft_dist_native(const ft_dist *d) { return d && d->opts.native_allreduce; }

ft_status ft_dist_set_options(ft_ctx *ctx, const ft_dist_options *opts) {
  if (!ctx || !opts) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_dist_set_options: NULL argument");
  if (!ctx->dist)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_dist_set_options: no communicator attached (ft_dist_init)");
  ft_dist_options o;
  ft_status st = ft_opts_read(ctx, "ft_dist_options", opts, sizeof o, &o);
  if (st) return st;
  if (!(o.timeout_seconds >= 0))
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_dist_set_options: timeout_seconds must be >= 0, got %g",
                        o.timeout_seconds);
  ctx->dist->opts = o;
  return FT_OK;
}

#ifndef FT_HAVE_MPI

static ft_status no_mpi(ft_ctx *ctx, const char *fn) {
  return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "%s: FrankenTrace was built without MPI (install libopenmpi-dev "
                      "and rebuild; meson option -Dmpi)", fn);
}

ft_status ft_dist_init(ft_ctx *ctx, const void *mpi_comm) {
  (void)mpi_comm;
  return no_mpi(ctx, "ft_dist_init");
}

ft_status ft_dist_check_program(ft_ctx *ctx, const ft_jaxpr *j) {
  (void)j;
  return no_mpi(ctx, "ft_dist_check_program");
}

ft_status ft_dist_finalize(ft_ctx *ctx) {
  if (ctx && ctx->dist) return no_mpi(ctx, "ft_dist_finalize");
  return FT_OK;
}

void ft_dist_shutdown(int status) { (void)status; }

bool ft_dist_allreduce_ok(ft_dtype dt) {
  (void)dt;
  return false;
}

ft_status ft_dist_exchange(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, const void *send, void *recv) {
  (void)d, (void)tag, (void)send, (void)recv;
  return no_mpi(ctx, "shard_map over MPI");
}

ft_status ft_dist_allreduce(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, ft_prim op, ft_dtype dt,
                            void *buf, int64_t n) {
  (void)d, (void)tag, (void)op, (void)dt, (void)buf, (void)n;
  return no_mpi(ctx, "shard_map over MPI");
}

ft_status ft_dist_alltoallv(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, const void *send,
                            const int *scounts, const int *sdispls, void *recv, const int *rcounts,
                            const int *rdispls) {
  (void)d, (void)tag, (void)send, (void)scounts, (void)sdispls, (void)recv, (void)rcounts, (void)rdispls;
  return no_mpi(ctx, "shard_map over MPI");
}

#else

static bool started_mpi; /* ft_dist_init called MPI_Init_thread */

static ft_status mpi_error(ft_ctx *ctx, ft_dist *d, int rc, const char *what) {
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  if (d) d->broken = true;
  return ft_set_error(ctx, FT_ERR_RUNTIME, "dist: %s failed on rank %d: %s", what, d ? d->rank : -1, msg);
}

static void dist_free(ft_ctx *ctx) {
  ft_dist *d = ctx->dist;
  if (!d) return;
  int fin = 0;
  MPI_Finalized(&fin);
  /* A communicator with a pending collective (broken) is left to MPI_Abort. */
  if (!fin && !d->broken) MPI_Comm_free(&d->comm);
  pthread_mutex_destroy(&d->lock);
  free(d);
  ctx->dist = NULL;
  ctx->dist_free = NULL;
}

ft_status ft_dist_init(ft_ctx *ctx, const void *mpi_comm) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  if (ctx->dist) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_dist_init: a communicator is already attached");
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (fin) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_dist_init: MPI is already finalized");
  if (!init) {
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return mpi_error(ctx, NULL, rc, "MPI_Init_thread");
    started_mpi = true;
  }
  ft_dist *d = calloc(1, sizeof *d);
  if (!d) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  MPI_Comm base = mpi_comm ? *(const MPI_Comm *)mpi_comm : MPI_COMM_WORLD;
  int rc = MPI_Comm_dup(base, &d->comm);
  if (rc != MPI_SUCCESS) {
    free(d);
    return mpi_error(ctx, NULL, rc, "MPI_Comm_dup");
  }
  MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
  pthread_mutex_init(&d->lock, NULL);
  MPI_Comm_rank(d->comm, &d->rank);
  MPI_Comm_size(d->comm, &d->size);
  ctx->dist = d;
  ctx->dist_free = dist_free;
  return FT_OK;
}

ft_status ft_dist_finalize(ft_ctx *ctx) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  dist_free(ctx);
  return FT_OK;
}

void ft_dist_shutdown(int status) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return;
  if (status) MPI_Abort(MPI_COMM_WORLD, status);
  else if (started_mpi) MPI_Finalize();
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Completes req: MPI_Wait, or in hardened mode a poll against the deadline. */
static ft_status finish(ft_ctx *ctx, ft_dist *d, MPI_Request *req, const char *what, const char *step) {
  if (!ft_hardened(ctx)) {
    int rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? FT_OK : mpi_error(ctx, d, rc, what);
  }
  double limit = d->opts.timeout_seconds > 0 ? d->opts.timeout_seconds : 60.0, t0 = now();
  long nap = 1000; /* ns, doubling to 1 ms */
  for (;;) {
    int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_error(ctx, d, rc, what);
    if (done) return FT_OK;
    if (now() - t0 > limit) {
      d->broken = true;
      return ft_set_error(ctx, FT_ERR_RUNTIME, "hardened: dist: %s on rank %d timed out after %g s waiting for "
                          "the other ranks (%d in all) at %s: a rank died, hangs, or runs another program; the "
                          "communicator is no longer usable", what, d->rank, limit, d->size, step);
    }
    struct timespec ts = {0, nap};
    nanosleep(&ts, NULL);
    if (nap < 1000000) nap *= 2;
  }
}

static void describe(const ft_dist_tag *t, char *buf, size_t cap) {
  char h[33];
  for (int i = 0; i < 16; i++) snprintf(h + 2 * i, 3, "%02x", t->hash[i]);
  if (t->prim == FT_DIST_PROGRAM)
    snprintf(buf, cap, "program %s", h);
  else if (t->prim == FT_DIST_ENTER)
    snprintf(buf, cap, "shard_map %s (mesh axis size %lld)", h, (long long)t->nbytes);
  else if (t->prim == FT_DIST_LEAVE)
    snprintf(buf, cap, "output %d of shard_map %s (%lld bytes)", t->eqn, h, (long long)t->nbytes);
  else if (t->prim >= 0 && t->prim < FT_NUM_PRIMS)
    snprintf(buf, cap, "%s at equation %d of shard_map %s (%lld bytes)", ft_prim_get((ft_prim)t->prim)->name,
             t->eqn, h, (long long)t->nbytes);
  else
    snprintf(buf, cap, "an unknown step (%d)", t->prim);
}

/* The tag phase: every rank's tag, compared with rank 0's. */
static ft_status check_tags(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag) {
  if (d->broken)
    return ft_set_error(ctx, FT_ERR_RUNTIME, "dist: the communicator is unusable after an earlier timeout or "
                        "MPI error on rank %d", d->rank);
  ft_dist_tag mine = *tag;
  mine.seq = d->seq++;
  ft_dist_tag *all = malloc(sizeof *all * (size_t)d->size);
  if (!all) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  char here[160];
  describe(&mine, here, sizeof here);
  MPI_Request req;
  int rc = MPI_Iallgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, d->comm, &req);
  ft_status st = rc == MPI_SUCCESS ? finish(ctx, d, &req, "the step check", here)
                                   : mpi_error(ctx, d, rc, "MPI_Iallgather");
  for (int q = 1; q < d->size && !st; q++) {
    if (!memcmp(&all[q], &all[0], sizeof mine)) continue;
    char a[160], b[160];
    describe(&all[0], a, sizeof a);
    describe(&all[q], b, sizeof b);
    if (all[q].seq != all[0].seq)
      snprintf(b + strlen(b), sizeof b - strlen(b), " after %llu exchanges (rank 0: %llu)",
               (unsigned long long)all[q].seq, (unsigned long long)all[0].seq);
    st = ft_set_error(ctx, FT_ERR_INVALID_ARG, "dist: the ranks disagree: rank 0 is at %s, rank %d at %s (every "
                      "rank must run the same program on inputs of the same shapes)", a, q, b);
  }
  free(all);
  return st;
}

ft_status ft_dist_exchange(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, const void *send, void *recv) {
  ft_status st = check_tags(ctx, d, tag);
  if (st || !recv) return st;
  if (tag->nbytes > INT32_MAX)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "dist: an exchange of %lld bytes per rank is past MPI's int "
                        "count (2 GiB)", (long long)tag->nbytes);
  char here[160];
  describe(tag, here, sizeof here);
  MPI_Request req;
  int n = (int)tag->nbytes;
  int rc = MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, d->comm, &req);
  return rc == MPI_SUCCESS ? finish(ctx, d, &req, "MPI_Iallgather", here) : mpi_error(ctx, d, rc, "MPI_Iallgather");
}

ft_status ft_dist_alltoallv(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, const void *send,
                            const int *scounts, const int *sdispls, void *recv, const int *rcounts,
                            const int *rdispls) {
  ft_status st = check_tags(ctx, d, tag);
  if (st) return st;
  char here[160];
  describe(tag, here, sizeof here);
  MPI_Request req;
  int rc = MPI_Ialltoallv(send, scounts, sdispls, MPI_BYTE, recv, rcounts, rdispls, MPI_BYTE, d->comm, &req);
  return rc == MPI_SUCCESS ? finish(ctx, d, &req, "MPI_Ialltoallv", here) : mpi_error(ctx, d, rc, "MPI_Ialltoallv");
}

static MPI_Datatype mpi_type(ft_dtype dt) {
  switch (dt) {
  case FT_F32: return MPI_FLOAT;
  case FT_F64: return MPI_DOUBLE;
  case FT_I32: return MPI_INT32_T;
  case FT_I64: return MPI_INT64_T;
  case FT_U32: return MPI_UINT32_T;
  case FT_U64: return MPI_UINT64_T;
  default: return MPI_DATATYPE_NULL;
  }
}

bool ft_dist_allreduce_ok(ft_dtype dt) { return mpi_type(dt) != MPI_DATATYPE_NULL; }

ft_status ft_dist_allreduce(ft_ctx *ctx, ft_dist *d, const ft_dist_tag *tag, ft_prim op, ft_dtype dt,
                            void *buf, int64_t n) {
  ft_status st = check_tags(ctx, d, tag);
  if (st) return st;
  if (n > INT32_MAX)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "dist: an allreduce of %lld elements is past MPI's int count",
                        (long long)n);
  char here[160];
  describe(tag, here, sizeof here);
  MPI_Op mop = op == FT_P_MAX ? MPI_MAX : op == FT_P_MIN ? MPI_MIN : MPI_SUM;
  MPI_Request req;
  int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, mpi_type(dt), mop, d->comm, &req);
  return rc == MPI_SUCCESS ? finish(ctx, d, &req, "MPI_Iallreduce", here) : mpi_error(ctx, d, rc, "MPI_Iallreduce");
}

ft_status ft_dist_check_program(ft_ctx *ctx, const ft_jaxpr *j) {
  ft_dist *d = ft_dist_get(ctx);
  if (!ctx || !j) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_dist_check_program: NULL argument");
  if (!d) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_dist_check_program: no communicator (ft_dist_init)");
  ft_dist_tag t = {.prim = FT_DIST_PROGRAM};
  ft_jaxpr_hash(j, t.hash);
  return check_tags(ctx, d, &t);
}

#endif
