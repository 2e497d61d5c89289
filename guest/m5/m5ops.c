/* m5 ops for x86-64 guests: the magic instructions and their QEMU/native stand-ins.
 * Uses only system calls (open, read, pwrite, mkdir, reboot) and no allocation, so it
 * links statically into the smallest initramfs. */
#define _GNU_SOURCE
#include "m5ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- raw ops ----
 * One function per op, each holding exactly one "0F 04 <code:16 LE>" so the test can
 * find every op's bytes in the disassembly.  Arguments go in rdi, rsi, rdx, rcx; the
 * result comes back in rax. */
#define M5OP_INSN ".byte 0x0f, 0x04\n\t.word %c[op]"
/* Only the registers an op reads are bound, so nothing else is set up before it. */
#define M5OP_ASM1(code, a0, result)                                                      \
    __asm__ volatile(M5OP_INSN : "=a"(result) : [op] "i"(code), "D"((uint64_t)(a0)) : "memory")
#define M5OP_ASM2(code, a0, a1, result)                                                  \
    __asm__ volatile(M5OP_INSN                                                           \
                     : "=a"(result)                                                      \
                     : [op] "i"(code), "D"((uint64_t)(a0)), "S"((uint64_t)(a1))          \
                     : "memory")
#define M5OP_ASM3(code, a0, a1, a2, result)                                              \
    __asm__ volatile(M5OP_INSN                                                           \
                     : "=a"(result)                                                      \
                     : [op] "i"(code), "D"((uint64_t)(a0)), "S"((uint64_t)(a1)),         \
                       "d"((uint64_t)(a2))                                               \
                     : "memory")
#define M5OP_ASM4(code, a0, a1, a2, a3, result)                                          \
    __asm__ volatile(M5OP_INSN                                                           \
                     : "=a"(result)                                                      \
                     : [op] "i"(code), "D"((uint64_t)(a0)), "S"((uint64_t)(a1)),         \
                       "d"((uint64_t)(a2)), "c"((uint64_t)(a3))                          \
                     : "memory")

/* noinline keeps each magic instruction in its own function, where the test looks. */
#define M5OP_FUNCTION __attribute__((noinline))

M5OP_FUNCTION void m5op_exit(uint64_t delay_ns) {
    uint64_t result;
    M5OP_ASM1(M5OP_EXIT, delay_ns, result);
    (void)result;
}

M5OP_FUNCTION void m5op_fail(uint64_t delay_ns, uint64_t code) {
    uint64_t result;
    M5OP_ASM2(M5OP_FAIL, delay_ns, code, result);
    (void)result;
}

M5OP_FUNCTION void m5op_reset_stats(uint64_t delay_ns, uint64_t period_ns) {
    uint64_t result;
    M5OP_ASM2(M5OP_RESET_STATS, delay_ns, period_ns, result);
    (void)result;
}

M5OP_FUNCTION void m5op_dump_stats(uint64_t delay_ns, uint64_t period_ns) {
    uint64_t result;
    M5OP_ASM2(M5OP_DUMP_STATS, delay_ns, period_ns, result);
    (void)result;
}

M5OP_FUNCTION void m5op_dump_reset_stats(uint64_t delay_ns, uint64_t period_ns) {
    uint64_t result;
    M5OP_ASM2(M5OP_DUMP_RESET_STATS, delay_ns, period_ns, result);
    (void)result;
}

M5OP_FUNCTION void m5op_checkpoint(uint64_t delay_ns, uint64_t period_ns) {
    uint64_t result;
    M5OP_ASM2(M5OP_CHECKPOINT, delay_ns, period_ns, result);
    (void)result;
}

M5OP_FUNCTION uint64_t m5op_write_file(const void *buffer, uint64_t length, uint64_t offset,
                         const char *host_name) {
    uint64_t result;
    M5OP_ASM4(M5OP_WRITE_FILE, (uintptr_t)buffer, length, offset, (uintptr_t)host_name, result);
    return result;
}

M5OP_FUNCTION uint64_t m5op_read_file(void *buffer, uint64_t length, uint64_t offset) {
    uint64_t result;
    M5OP_ASM3(M5OP_READ_FILE, (uintptr_t)buffer, length, offset, result);
    return result;
}

M5OP_FUNCTION void m5op_work_begin(uint64_t work_id, uint64_t thread_id) {
    uint64_t result;
    M5OP_ASM2(M5OP_WORK_BEGIN, work_id, thread_id, result);
    (void)result;
}

M5OP_FUNCTION void m5op_work_end(uint64_t work_id, uint64_t thread_id) {
    uint64_t result;
    M5OP_ASM2(M5OP_WORK_END, work_id, thread_id, result);
    (void)result;
}

M5OP_FUNCTION void m5op_switch_cpu(void) {
    uint64_t result;
    M5OP_ASM1(M5OP_SWITCH_CPU, 0, result);
    (void)result;
}

/* ---- backend ---- */

static const char BACKEND_KEY[] = "pimcloud.backend=";
static int decided_backend = -1;

const char *m5_backend_name(enum m5_backend backend) {
    switch (backend) {
    case M5_BACKEND_GEM5:
        return "gem5";
    case M5_BACKEND_QEMU:
        return "qemu";
    case M5_BACKEND_NATIVE:
        break;
    }
    return "native";
}

static enum m5_backend backend_from_word(const char *word, size_t length) {
    if (length == 4 && memcmp(word, "gem5", 4) == 0)
        return M5_BACKEND_GEM5;
    if (length == 4 && memcmp(word, "qemu", 4) == 0)
        return M5_BACKEND_QEMU;
    return M5_BACKEND_NATIVE;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

enum m5_backend m5_backend_from_cmdline(const char *cmdline) {
    enum m5_backend found = M5_BACKEND_NATIVE;
    const char *p = cmdline;
    while (*p) {
        while (is_space(*p))
            p++;
        const char *word = p;
        while (*p && !is_space(*p))
            p++;
        size_t length = (size_t)(p - word);
        size_t key = sizeof BACKEND_KEY - 1;
        /* The last occurrence wins, as for kernel parameters. */
        if (length > key && memcmp(word, BACKEND_KEY, key) == 0)
            found = backend_from_word(word + key, length - key);
    }
    return found;
}

enum m5_backend m5_backend(void) {
    if (decided_backend >= 0)
        return (enum m5_backend)decided_backend;
    enum m5_backend backend = M5_BACKEND_NATIVE;
    const char *forced = getenv("PIMCLOUD_BACKEND");
    if (forced && *forced)
        backend = backend_from_word(forced, strlen(forced));
    else
        backend = m5_backend_of_kernel();
    decided_backend = (int)backend;
    return backend;
}

enum m5_backend m5_backend_of_kernel(void) {
    char cmdline[4096];
    int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return M5_BACKEND_NATIVE;
    ssize_t got = read(fd, cmdline, sizeof cmdline - 1);
    close(fd);
    if (got <= 0)
        return M5_BACKEND_NATIVE;
    cmdline[got] = '\0';
    return m5_backend_from_cmdline(cmdline);
}

void m5_backend_reset(void) { decided_backend = -1; }

/* ---- stand-ins outside gem5 ---- */

static void write_all(int fd, const char *text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t done = write(fd, text, left);
        if (done <= 0)
            return;
        text += done;
        left -= (size_t)done;
    }
}

static void log_line(const char *op, const char *what) {
    write_all(2, "m5: ");
    write_all(2, op);
    write_all(2, ": ");
    write_all(2, what);
    write_all(2, " (backend ");
    write_all(2, m5_backend_name(m5_backend()));
    write_all(2, ")\n");
}

/* Markers the QEMU host reads from the serial console, whatever the caller's stdout is. */
static void console_marker(const char *text) {
    int fd = open("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        fd = 2;
    write_all(fd, text);
    if (fd != 2)
        close(fd);
}

static void format_u64(uint64_t value, char *out) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    while (n)
        *out++ = digits[--n];
    *out = '\0';
}

static int power_off(void) {
    sync();
    if (reboot(RB_POWER_OFF) < 0)
        return -errno;
    return 0;
}

static const char *share_dir(void) {
    const char *dir = getenv("PIMCLOUD_M5_SHARE");
    return (dir && *dir) ? dir : M5_SHARE_DIR;
}

/* dir + "/" + name into out; -ENAMETOOLONG when it does not fit. */
static int join_path(char *out, size_t size, const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    if (a + 1 + b + 1 > size)
        return -ENAMETOOLONG;
    memcpy(out, dir, a);
    out[a] = '/';
    memcpy(out + a + 1, name, b + 1);
    return 0;
}

/* A host name must stay inside the output folder: relative, no "." or ".." parts. */
static int valid_host_name(const char *name) {
    if (!*name || *name == '/')
        return 0;
    const char *part = name;
    while (*part) {
        const char *end = strchr(part, '/');
        size_t length = end ? (size_t)(end - part) : strlen(part);
        if (length == 0 || (length == 1 && part[0] == '.') ||
            (length == 2 && part[0] == '.' && part[1] == '.'))
            return 0;
        if (!end)
            break;
        part = end + 1;
    }
    return 1;
}

/* mkdir -p of every parent folder of path. */
static int make_parents(char *path) {
    for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        int failed = mkdir(path, 0755) < 0 && errno != EEXIST;
        int error = errno;
        *slash = '/';
        if (failed)
            return -error;
    }
    return 0;
}

/* ---- backend-aware calls ---- */

int m5_exit(uint64_t delay_ns) {
    switch (m5_backend()) {
    case M5_BACKEND_GEM5:
        m5op_exit(delay_ns);
        return 0;
    case M5_BACKEND_QEMU:
        console_marker("pimcloud-m5-exit\n");
        return power_off();
    case M5_BACKEND_NATIVE:
        break;
    }
    log_line("exit", "not powering off a native machine");
    return 0;
}

int m5_fail(uint64_t delay_ns, uint64_t code) {
    char line[64] = "pimcloud-fail code=";
    format_u64(code, line + strlen(line));
    strcat(line, "\n");
    switch (m5_backend()) {
    case M5_BACKEND_GEM5:
        m5op_fail(delay_ns, code);
        return 0;
    case M5_BACKEND_QEMU:
        console_marker(line);
        return power_off();
    case M5_BACKEND_NATIVE:
        break;
    }
    write_all(2, line);
    return 0;
}

#define STATS_CALL(name, op, label)                                                        \
    int name(uint64_t a, uint64_t b) {                                                     \
        if (m5_backend() == M5_BACKEND_GEM5) {                                             \
            op(a, b);                                                                      \
            return 0;                                                                      \
        }                                                                                  \
        log_line(label, "no-op outside gem5");                                             \
        return 0;                                                                          \
    }

STATS_CALL(m5_reset_stats, m5op_reset_stats, "resetstats")
STATS_CALL(m5_dump_stats, m5op_dump_stats, "dumpstats")
STATS_CALL(m5_dump_reset_stats, m5op_dump_reset_stats, "dumpresetstats")
STATS_CALL(m5_checkpoint, m5op_checkpoint, "checkpoint")
STATS_CALL(m5_work_begin, m5op_work_begin, "workbegin")
STATS_CALL(m5_work_end, m5op_work_end, "workend")

static void switch_cpu_op(uint64_t unused_a, uint64_t unused_b) {
    (void)unused_a;
    (void)unused_b;
    m5op_switch_cpu();
}
STATS_CALL(m5_switch_cpu, switch_cpu_op, "switchcpu")

/* gem5 copies to and from an op's buffer through the guest's page tables and takes no
 * page fault: a page Linux has not mapped yet stops gem5 ("writeBlob(...) failed").  So
 * every page is touched first, for readfile with a write (a page only read would be
 * the shared zero page, and gem5 would fill that). */
static void touch(volatile char *byte, int writable) {
    char value = *byte;
    if (writable)
        *byte = value;
}

static void map_pages(volatile char *bytes, uint64_t length, int writable) {
    if (length == 0)
        return;
    for (uint64_t at = 0; at < length; at += 4096)  /* 4 KiB: the smallest x86 page */
        touch(bytes + at, writable);
    touch(bytes + length - 1, writable);  /* the last page, when length is not aligned */
}

int64_t m5_read_file(void *buffer, uint64_t length, uint64_t offset) {
    if (m5_backend() == M5_BACKEND_GEM5) {
        map_pages(buffer, length, 1);
        return (int64_t)m5op_read_file(buffer, length, offset);
    }
    char path[4096];
    int error = join_path(path, sizeof path, share_dir(), "readfile");
    if (error)
        return error;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t got = pread(fd, buffer, length, (off_t)offset);
    error = errno;
    close(fd);
    return got < 0 ? -error : (int64_t)got;
}

int64_t m5_write_file(const void *buffer, uint64_t length, uint64_t offset,
                      const char *host_name) {
    if (!valid_host_name(host_name))
        return -EINVAL;
    if (m5_backend() == M5_BACKEND_GEM5) {
        map_pages((volatile char *)(uintptr_t)buffer, length, 0);
        map_pages((volatile char *)(uintptr_t)host_name, strlen(host_name) + 1, 0);
        return (int64_t)m5op_write_file(buffer, length, offset, host_name);
    }
    char out_dir[4096], path[4096];
    int error = join_path(out_dir, sizeof out_dir, share_dir(), "out");
    if (!error)
        error = join_path(path, sizeof path, out_dir, host_name);
    if (!error)
        error = make_parents(path);
    if (error)
        return error;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (offset == 0 ? O_TRUNC : 0), 0644);
    if (fd < 0)
        return -errno;
    const char *bytes = buffer;
    uint64_t done = 0;
    while (done < length) {
        ssize_t wrote = pwrite(fd, bytes + done, length - done, (off_t)(offset + done));
        if (wrote < 0) {
            error = errno;
            close(fd);
            return -error;
        }
        done += (uint64_t)wrote;
    }
    if (close(fd) < 0)
        return -errno;
    return (int64_t)done;
}
