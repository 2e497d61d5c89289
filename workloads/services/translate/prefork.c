// One start-up for every worker's Apertium pipeline ("prefork").
//
// Each translate worker keeps its own pipeline of Apertium's stages (11 processes), and
// the stages load their dictionaries and transfer rules before they read their input: 937 M
// instructions a worker, hours of gem5's atomic cores for a 16-worker preset. Preloaded
// into the stages, this library lets one pipeline load and then copy itself: a stage
// started with
//     PIMCLOUD_PREFORK=<dir>:<stage>:<copies>
// forks copies-1 children the first time it reads its standard input (what it loads,
// loaded), child k reading the FIFO <dir>/<k>.<stage> and writing <dir>/<k>.<stage+1>.
// The copies share the loaded pages copy-on-write, as Moses's threads share one model;
// each still translates on its own processes. The installed stages read their input
// through __uflow (lttoolbox's and libapertium's getc_unlocked) or fread (lex-tools),
// called across a library boundary, so a preload sees them; the other entry points below
// cover the C library's other ways to read a stream.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

static int forked;  // the first read of stdin has happened (in this process or a parent)

static void fail(const char* what, const char* path) {
  fprintf(stderr, "pimcloud prefork: %s %s: %s\n", what, path, strerror(errno));
  _exit(70);
}

static void reopen(int fd, const char* dir, int copy, int stage, int flags) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%d.%d", dir, copy, stage);
  int opened;
  do {
    opened = open(path, flags | O_CLOEXEC);
  } while (opened < 0 && errno == EINTR);
  if (opened < 0) fail("cannot open", path);
  if (dup2(opened, fd) < 0) fail("cannot dup2", path);
  close(opened);
}

// Parses PIMCLOUD_PREFORK; 0 when it is unset (the process then runs alone). A malformed
// value is an error: the service would wait for copies that never come.
static int parse(char* dir, size_t size, int* stage, int* copies) {
  const char* spec = getenv("PIMCLOUD_PREFORK");
  if (spec == NULL) return 0;
  const char* colon = strrchr(spec, ':');
  const char* first = colon;
  while (first != NULL && first > spec && *--first != ':') {
  }
  if (colon == NULL || first == NULL || *first != ':' || (size_t)(first - spec) >= size) {
    errno = EINVAL;
    fail("PIMCLOUD_PREFORK is not <dir>:<stage>:<copies>:", spec);
  }
  memcpy(dir, spec, (size_t)(first - spec));
  dir[first - spec] = '\0';
  char* end = NULL;
  *stage = (int)strtol(first + 1, &end, 10);
  const int stage_ok = end == colon && end != first + 1;
  *copies = (int)strtol(colon + 1, &end, 10);
  if (!stage_ok || *end != '\0' || end == colon + 1 || *stage < 0 || *copies < 1) {
    errno = EINVAL;
    fail("PIMCLOUD_PREFORK is not <dir>:<stage>:<copies>:", spec);
  }
  return 1;
}

// fork copies the calling thread only: a stage that started others cannot be copied.
static int threads(void) {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == NULL) return 1;
  int count = 0;
  for (struct dirent* entry; (entry = readdir(tasks)) != NULL;) count += entry->d_name[0] != '.';
  closedir(tasks);
  return count;
}

static void prefork_now(void) {
  if (forked) return;
  forked = 1;
  char dir[4096];
  int stage = 0, copies = 1;
  if (!parse(dir, sizeof dir, &stage, &copies)) return;
  unsetenv("PIMCLOUD_PREFORK");  // a program the stage runs is not a stage
  if (copies > 1 && threads() > 1) {
    errno = ENOTSUP;
    fail("cannot copy a stage that runs threads:", dir);
  }
  fflush(stdout);  // the stages write nothing before their first read; should one, once
  for (int k = 1; k < copies; ++k) {
    const pid_t pid = fork();
    if (pid < 0) fail("cannot fork for copy", dir);
    if (pid == 0) {
      // Let go of worker 0's pipes first, so that worker 0's pipeline still ends if this
      // copy never gets its FIFOs.
      const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
      if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0) {
        fail("cannot open", "/dev/null");
      }
      close(null);
      // Input first: each FIFO's two ends meet in the order the data flows (no deadlock).
      reopen(STDIN_FILENO, dir, k, stage, O_RDONLY);
      reopen(STDOUT_FILENO, dir, k, stage + 1, O_WRONLY);
      return;
    }
  }
}

// The C library's own entry point, looked up once (POSIX's way to a function pointer).
#define LOOKUP(real, name)                                     \
  do {                                                         \
    if ((real) == NULL) *(void**)(&(real)) = dlsym(RTLD_NEXT, name); \
  } while (0)

ssize_t read(int fd, void* buf, size_t count) {
  static ssize_t (*real)(int, void*, size_t);
  LOOKUP(real, "read");
  if (fd == STDIN_FILENO) prefork_now();
  return real(fd, buf, count);
}

size_t fread(void* ptr, size_t size, size_t n, FILE* stream) {
  static size_t (*real)(void*, size_t, size_t, FILE*);
  LOOKUP(real, "fread");
  if (stream == stdin) prefork_now();
  return real(ptr, size, n, stream);
}

size_t __fread_chk(void* ptr, size_t ptrlen, size_t size, size_t n, FILE* stream);
size_t __fread_chk(void* ptr, size_t ptrlen, size_t size, size_t n, FILE* stream) {
  static size_t (*real)(void*, size_t, size_t, size_t, FILE*);
  LOOKUP(real, "__fread_chk");
  if (stream == stdin) prefork_now();
  return real(ptr, ptrlen, size, n, stream);
}

int __uflow(FILE* stream);
int __uflow(FILE* stream) {
  static int (*real)(FILE*);
  LOOKUP(real, "__uflow");
  if (stream == stdin) prefork_now();
  return real(stream);
}

int getc(FILE* stream) {
  static int (*real)(FILE*);
  LOOKUP(real, "getc");
  if (stream == stdin) prefork_now();
  return real(stream);
}

int fgetc(FILE* stream) {
  static int (*real)(FILE*);
  LOOKUP(real, "fgetc");
  if (stream == stdin) prefork_now();
  return real(stream);
}

wint_t getwc(FILE* stream) {
  static wint_t (*real)(FILE*);
  LOOKUP(real, "getwc");
  if (stream == stdin) prefork_now();
  return real(stream);
}

wint_t fgetwc(FILE* stream) {
  static wint_t (*real)(FILE*);
  LOOKUP(real, "fgetwc");
  if (stream == stdin) prefork_now();
  return real(stream);
}

char* fgets(char* s, int size, FILE* stream) {
  static char* (*real)(char*, int, FILE*);
  LOOKUP(real, "fgets");
  if (stream == stdin) prefork_now();
  return real(s, size, stream);
}
