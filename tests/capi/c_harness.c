/* See c_harness.h. */
#define _POSIX_C_SOURCE 200809L

#include "c_harness.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int g_rank = -1;

void harness_fail(const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " [%s:%d]\n", file, line);
  fflush(stderr);
  exit(1);
}

void check_fails_(c10d_status_t got, c10d_status_t want, const char* call, const char* s1,
                  const char* s2, const char* s3, const char* file, int line) {
  const char* msg = c10d_last_error();
  const char* subs[3];
  int i;
  subs[0] = s1;
  subs[1] = s2;
  subs[2] = s3;
  if (got != want) {
    fprintf(stderr, "[rank %d] %s returned %s, expected %s: ", g_rank, call, c10d_status_name(got),
            c10d_status_name(want));
    harness_fail(file, line, "last error: '%s'", msg);
  }
  for (i = 0; i < 3; ++i) {
    if (subs[i] != NULL && strstr(msg, subs[i]) == NULL) {
      fprintf(stderr, "[rank %d] %s: the message does not contain '%s': ", g_rank, call, subs[i]);
      harness_fail(file, line, "'%s'", msg);
    }
  }
}

double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One mkdtemp directory per test process: a pid-only name is not unique over a CI run (pids wrap)
 * and a stale store file with an old job's keys would be read by a new one. */
static char g_temp_dir[256];
static pid_t g_temp_dir_owner = 0;

static void remove_temp_dir(void) {
  DIR* d;
  struct dirent* e;
  char path[512];
  if (g_temp_dir_owner != getpid())
    return; /* a rank's exit() must not remove its siblings' files */
  d = opendir(g_temp_dir);
  if (d == NULL) return;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof(path), "%s/%s", g_temp_dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(g_temp_dir);
}

void temp_path(char* out, size_t n, const char* tag) {
  static int counter = 0;
  if (g_temp_dir_owner != getpid()) {
    const int first = g_temp_dir_owner == 0;
    snprintf(g_temp_dir, sizeof(g_temp_dir), "/tmp/c10d-capi-%ld-XXXXXX", (long)getpid());
    if (mkdtemp(g_temp_dir) == NULL) {
      fprintf(stderr, "temp_path: mkdtemp(%s) failed: %s\n", g_temp_dir, strerror(errno));
      exit(1);
    }
    g_temp_dir_owner = getpid();
    if (first) atexit(remove_temp_dir);
  }
  snprintf(out, n, "%s/%d-%s", g_temp_dir, counter++, tag);
}

int run_ranks(int size, int timeout_s, rank_fn fn, void* arg) {
  pid_t pids[64];
  int done[64];
  int failed = 0;
  int left = size;
  int r;
  const double deadline = now_ms() + 1000.0 * timeout_s;
  if (size > 64) {
    fprintf(stderr, "run_ranks: at most 64 ranks\n");
    return size;
  }
  fflush(stdout);
  fflush(stderr);
  for (r = 0; r < size; ++r) {
    pids[r] = fork();
    if (pids[r] < 0) {
      perror("fork");
      exit(1);
    }
    if (pids[r] == 0) {
      g_rank = r;
      fn(r, size, arg);
      fflush(stdout);
      fflush(stderr);
      exit(0); /* not _exit: LeakSanitizer checks the rank at exit */
    }
    done[r] = 0;
  }
  while (left > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno != EINTR) break;
    if (pid <= 0) {
      struct timespec ts = {0, 5 * 1000 * 1000};
      if (now_ms() > deadline) break;
      nanosleep(&ts, NULL);
      continue;
    }
    for (r = 0; r < size; ++r) {
      if (pids[r] != pid) continue;
      done[r] = 1;
      --left;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
      ++failed;
      if (WIFEXITED(status)) {
        fprintf(stderr, "rank %d (pid %ld) exited with status %d\n", r, (long)pid,
                WEXITSTATUS(status));
      } else if (WIFSIGNALED(status)) {
        fprintf(stderr, "rank %d (pid %ld) was killed by signal %d (%s)\n", r, (long)pid,
                WTERMSIG(status), strsignal(WTERMSIG(status)));
      }
    }
  }
  for (r = 0; r < size; ++r) {
    if (done[r]) continue;
    fprintf(stderr, "rank %d (pid %ld) still running after %d s: killed\n", r, (long)pids[r],
            timeout_s);
    kill(pids[r], SIGKILL);
    waitpid(pids[r], NULL, 0);
    ++failed;
  }
  return failed;
}
