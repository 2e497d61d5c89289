// One start-up for every worker's Apertium pipeline ("prefork").
//
// Each translate worker keeps its own pipeline of Apertium's stages (11 processes), and
// every stage loads its dictionaries before it reads a byte: 937 M instructions a worker,
// hours of gem5's atomic cores for a 16-worker preset. Preloaded into the stages, this
// library lets one pipeline load and then copy itself: a stage started with
//     PIMCLOUD_PREFORK=<dir>:<stage>:<copies>
// forks copies-1 children the first time it reads its standard input (its dictionaries
// loaded), child k reading the FIFO <dir>/<k>.<stage> and writing <dir>/<k>.<stage+1>.
// The copies share the loaded pages copy-on-write, as Moses's threads share one model;
// each still translates on its own processes. Apertium's programs read their input through
// these C library entry points (lttoolbox: __uflow and ICU's __fread_chk; lex-tools:
// fread; C++ streams: getc, getwc, read), all called across a library boundary, so a
// preload sees them.
#define _GNU_SOURCE
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
  const int opened = open(path, flags | O_CLOEXEC);
  if (opened < 0) fail("cannot open", path);
  if (dup2(opened, fd) < 0) fail("cannot dup2", path);
  close(opened);
}

// Parses PIMCLOUD_PREFORK; 0 when it is unset or malformed (the process then runs alone).
static int parse(char* dir, size_t size, int* stage, int* copies) {
  const char* spec = getenv("PIMCLOUD_PREFORK");
  if (spec == NULL) return 0;
  const char* colon = strrchr(spec, ':');
  if (colon == NULL || colon == spec) return 0;
  const char* first = colon - 1;
  while (first > spec && *first != ':') --first;
  if (*first != ':' || (size_t)(first - spec) >= size) return 0;
  memcpy(dir, spec, (size_t)(first - spec));
  dir[first - spec] = '\0';
  *stage = atoi(first + 1);
  *copies = atoi(colon + 1);
  return *stage >= 0 && *copies >= 1;
}

static void prefork_now(void) {
  if (forked) return;
  forked = 1;
  char dir[4096];
  int stage = 0, copies = 1;
  if (!parse(dir, sizeof dir, &stage, &copies)) return;
  fflush(stdout);  // nothing written before the fork is written twice
  for (int k = 1; k < copies; ++k) {
    const pid_t pid = fork();
    if (pid < 0) fail("cannot fork for copy", dir);
    if (pid == 0) {
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
