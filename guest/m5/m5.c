/* The m5 command: each m5 op from a shell, in gem5, QEMU or on a host (see m5ops.h). */
#define _GNU_SOURCE
#include "m5ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CHUNK = 64 * 1024 };
static char chunk[CHUNK];

static void usage(void) {
    fputs("usage: m5 COMMAND [ARGS]\n"
          "  exit [DELAY_NS]                    end the simulation (QEMU: power off)\n"
          "  fail CODE [DELAY_NS]               end it with a failure code\n"
          "  resetstats [DELAY_NS [PERIOD_NS]]  reset gem5 statistics\n"
          "  dumpstats [DELAY_NS [PERIOD_NS]]   dump them to stats.txt\n"
          "  dumpresetstats [DELAY_NS [PERIOD_NS]]\n"
          "  checkpoint [DELAY_NS [PERIOD_NS]]  take a checkpoint (gem5 only)\n"
          "  readfile [FILE]                    copy the host's file to FILE or stdout\n"
          "  writefile GUEST_FILE [HOST_NAME]   copy a guest file out to the host\n"
          "  workbegin [WORK_ID [THREAD_ID]]    mark the start of a work item\n"
          "  workend [WORK_ID [THREAD_ID]]\n"
          "  switchcpu                          gem5: switch to the detailed CPUs now\n"
          "  backend                            print gem5, qemu or native\n"
          "The backend comes from pimcloud.backend= on the kernel command line\n"
          "(PIMCLOUD_BACKEND overrides it); without one m5 never runs a magic instruction.\n",
          stderr);
}

static int parse_u64(const char *text, uint64_t *value) {
    char *end;
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, 0);
    if (errno || end == text || *end || text[0] == '-') {
        fprintf(stderr, "m5: '%s' is not a non-negative integer\n", text);
        return -1;
    }
    *value = parsed;
    return 0;
}

/* Up to two optional numeric arguments, zero when absent. */
static int two_numbers(int argc, char **argv, uint64_t *a, uint64_t *b) {
    *a = *b = 0;
    if (argc > 2) {
        fprintf(stderr, "m5 %s: at most two numbers expected\n", argv[-1]);
        return -1;
    }
    if (argc > 0 && parse_u64(argv[0], a))
        return -1;
    if (argc > 1 && parse_u64(argv[1], b))
        return -1;
    return 0;
}

static int report(const char *what, int64_t result) {
    if (result >= 0)
        return 0;
    fprintf(stderr, "m5 %s: %s\n", what, strerror((int)-result));
    return 1;
}

static int write_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t done = write(fd, bytes, length);
        if (done < 0)
            return -errno;
        bytes += done;
        length -= (size_t)done;
    }
    return 0;
}

static int read_file_command(int argc, char **argv) {
    if (argc > 1) {
        usage();
        return 2;
    }
    int fd = 1;
    if (argc == 1) {
        fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            fprintf(stderr, "m5 readfile: cannot create %s: %s\n", argv[0], strerror(errno));
            return 1;
        }
    }
    uint64_t offset = 0;
    for (;;) {
        int64_t got = m5_read_file(chunk, CHUNK, offset);
        if (got < 0)
            return report("readfile", got);
        if (got == 0)
            break;
        int error = write_all(fd, chunk, (size_t)got);
        if (error)
            return report("readfile (writing the copy)", error);
        offset += (uint64_t)got;
    }
    if (fd != 1 && close(fd) < 0)
        return report("readfile (closing the copy)", -errno);
    return 0;
}

static int write_file_command(int argc, char **argv) {
    if (argc < 1 || argc > 2) {
        usage();
        return 2;
    }
    const char *host_name = argc == 2 ? argv[1] : strrchr(argv[0], '/');
    host_name = argc == 2 ? host_name : (host_name ? host_name + 1 : argv[0]);
    int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "m5 writefile: cannot open %s: %s\n", argv[0], strerror(errno));
        return 1;
    }
    uint64_t offset = 0;
    for (;;) {
        ssize_t got = read(fd, chunk, CHUNK);
        if (got < 0) {
            fprintf(stderr, "m5 writefile: reading %s: %s\n", argv[0], strerror(errno));
            close(fd);
            return 1;
        }
        /* An empty file still creates its (empty) host copy. */
        if (got == 0 && offset > 0)
            break;
        int64_t wrote = m5_write_file(chunk, (uint64_t)got, offset, host_name);
        if (wrote < 0) {
            close(fd);
            if (wrote == -EINVAL)
                fprintf(stderr, "m5 writefile: host name '%s' must be relative, without "
                                "'.' or '..' parts\n", host_name);
            return report("writefile", wrote);
        }
        offset += (uint64_t)got;
        if (got == 0)
            break;
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *command = argv[1];
    int rest = argc - 2;
    char **args = argv + 2;
    uint64_t a, b;
    if (strcmp(command, "backend") == 0) {
        puts(m5_backend_name(m5_backend()));
        return 0;
    }
    if (strcmp(command, "readfile") == 0)
        return read_file_command(rest, args);
    if (strcmp(command, "writefile") == 0)
        return write_file_command(rest, args);
    if (strcmp(command, "exit") == 0) {
        if (rest > 1 || two_numbers(rest, args, &a, &b))
            return 2;
        return report("exit", m5_exit(a));
    }
    if (strcmp(command, "fail") == 0) {
        if (rest < 1 || two_numbers(rest, args, &a, &b)) {
            usage();
            return 2;
        }
        return report("fail", m5_fail(b, a));
    }
    static const struct {
        const char *name;
        int (*call)(uint64_t, uint64_t);
    } pairs[] = {
        {"resetstats", m5_reset_stats},   {"dumpstats", m5_dump_stats},
        {"dumpresetstats", m5_dump_reset_stats}, {"checkpoint", m5_checkpoint},
        {"workbegin", m5_work_begin},     {"workend", m5_work_end},
        {"switchcpu", m5_switch_cpu},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (strcmp(command, pairs[i].name) == 0) {
            if (two_numbers(rest, args, &a, &b))
                return 2;
            return report(command, pairs[i].call(a, b));
        }
    }
    fprintf(stderr, "m5: unknown command '%s'\n", command);
    usage();
    return 2;
}
