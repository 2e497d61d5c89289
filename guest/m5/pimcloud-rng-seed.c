/* pimcloud-rng-seed: make a pimcloud guest kernel's random number generator ready at boot.
 *
 * gem5 has no RDRAND and no entropy device, so Linux 6.1's CRNG is not ready when the
 * init runs. The first read of /dev/urandom then runs the kernel's jitter-entropy loop
 * (try_to_generate_entropy): a busy loop crediting one bit per timer tick, about a
 * second of simulated time at HZ=250, gigabytes of instructions on the atomic cores
 * (SQLite reads /dev/urandom for its WAL salts, so oltp's load took over 20 minutes of
 * host time to reach it). A getrandom() without GRND_NONBLOCK waits for the same.
 *
 * This credits a fixed seed to the input pool (RNDADDENTROPY), which makes the CRNG ready
 * at once. A simulated server keeps no secrets, and a fixed seed keeps gem5 runs
 * deterministic and the guest's randomness the same in QEMU and gem5. It refuses to run
 * on a kernel that is not a pimcloud guest's (no pimcloud.backend= on its command line).
 */
#define _GNU_SOURCE
#include "m5ops.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <unistd.h>

enum { SEED_WORDS = 8, EXIT_REFUSED = 2 }; /* 256 bits: what the CRNG needs to be ready */

static void usage(void) {
    fputs("usage: pimcloud-rng-seed [SEED]\n"
          "Credits 256 bits derived from SEED (a decimal integer, default 1) to the\n"
          "kernel's entropy pool, so that its CRNG is ready; only in a pimcloud guest\n"
          "(pimcloud.backend=gem5|qemu on the kernel command line), as root.\n"
          "Prints: pimcloud-rng crng=ready|not-ready was_ready=0|1 seed=SEED\n",
          stderr);
}

static int crng_ready(void) {
    unsigned char byte;
    return getrandom(&byte, 1, GRND_NONBLOCK) == 1;
}

/* splitmix64 (Steele et al.): spreads the seed number over the words mixed in. */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int credit_seed(uint64_t seed) {
    union {
        struct rand_pool_info info;
        unsigned char bytes[sizeof(struct rand_pool_info) + SEED_WORDS * sizeof(uint32_t)];
    } request;
    memset(&request, 0, sizeof request);
    request.info.entropy_count = SEED_WORDS * 32;
    request.info.buf_size = SEED_WORDS * sizeof(uint32_t);
    uint64_t state = seed;
    for (int i = 0; i < SEED_WORDS; i += 2) {
        uint64_t value = splitmix64(&state);
        request.info.buf[i] = (uint32_t)value;
        request.info.buf[i + 1] = (uint32_t)(value >> 32);
    }
    int fd = open("/dev/urandom", O_WRONLY);
    if (fd < 0) {
        fprintf(stderr, "pimcloud-rng-seed: cannot open /dev/urandom: %s\n", strerror(errno));
        return -1;
    }
    int result = ioctl(fd, RNDADDENTROPY, &request.info);
    int saved = errno;
    close(fd);
    if (result != 0) {
        fprintf(stderr, "pimcloud-rng-seed: RNDADDENTROPY failed: %s%s\n", strerror(saved),
                saved == EPERM ? " (it needs root: run it from the init)" : "");
        return -1;
    }
    return 0;
}

static void say(int ready, int was_ready, uint64_t seed) {
    printf("pimcloud-rng crng=%s was_ready=%d seed=%llu\n", ready ? "ready" : "not-ready",
           was_ready, (unsigned long long)seed);
}

/* A decimal seed: digits only, no sign, no base prefix, within 64 bits. */
static int parse_seed(const char *text, uint64_t *seed) {
    if (!isdigit((unsigned char)text[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (errno || *end)
        return -1;
    *seed = parsed;
    return 0;
}

int main(int argc, char **argv) {
    uint64_t seed = 1;
    if (argc > 2 || (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
        usage();
        return argc > 2 ? EXIT_REFUSED : 0;
    }
    if (argc == 2 && parse_seed(argv[1], &seed) != 0) {
        fprintf(stderr, "pimcloud-rng-seed: SEED '%s' is not a decimal non-negative integer "
                        "below 2^64\n", argv[1]);
        return EXIT_REFUSED;
    }
    /* The kernel's word alone: PIMCLOUD_BACKEND in the environment must not make a host's
     * kernel take a fixed seed. */
    if (m5_backend_of_kernel() == M5_BACKEND_NATIVE) {
        fputs("pimcloud-rng-seed: not a pimcloud guest (no pimcloud.backend=gem5|qemu on the "
              "kernel command line): refusing to credit a fixed seed to this kernel's random "
              "number generator\n",
              stderr);
        return EXIT_REFUSED;
    }
    int was_ready = crng_ready();
    if (!was_ready && credit_seed(seed) != 0) {
        say(0, was_ready, seed);
        return 1;
    }
    int ready = crng_ready();
    say(ready, was_ready, seed);
    return ready ? 0 : 1;
}
