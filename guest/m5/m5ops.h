/* m5 ops for x86-64 guests, written from the encoding (0F 04 + 16-bit function code).
 *
 * Two layers:
 *   m5op_*  the magic instruction itself; only valid inside gem5 (it faults elsewhere).
 *   m5_*    what a guest program calls: dispatches on the backend the kernel command line
 *           names (pimcloud.backend=gem5|qemu|native) and maps each op to its QEMU or
 *           native equivalent, so the same program runs in gem5, QEMU and on a host.
 *
 * Outside gem5, readfile/writefile use a shared folder (M5_SHARE_DIR): readfile reads
 * <share>/readfile, writefile writes <share>/out/<host name>.  Exit powers off (QEMU only).
 */
#ifndef PIMCLOUD_M5OPS_H
#define PIMCLOUD_M5OPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Function codes of the x86 m5 ops (gem5's pseudo-instruction numbers). */
enum m5op_code {
    M5OP_EXIT = 0x21,
    M5OP_FAIL = 0x22,
    M5OP_RESET_STATS = 0x40,
    M5OP_DUMP_STATS = 0x41,
    M5OP_DUMP_RESET_STATS = 0x42,
    M5OP_CHECKPOINT = 0x43,
    M5OP_WRITE_FILE = 0x4F,
    M5OP_READ_FILE = 0x50,
    M5OP_SWITCH_CPU = 0x52,
    M5OP_WORK_BEGIN = 0x5a,
    M5OP_WORK_END = 0x5b,
};

/* Where the guest runs; decides what each m5_* call does. */
enum m5_backend {
    M5_BACKEND_NATIVE = 0, /* a plain host or an unknown machine: never a magic instruction */
    M5_BACKEND_GEM5 = 1,
    M5_BACKEND_QEMU = 2,
};

/* Default shared folder outside gem5; the environment variable PIMCLOUD_M5_SHARE overrides. */
#define M5_SHARE_DIR "/pimcloud/host"

/* ---- raw ops: one magic instruction each (gem5 only) ---- */
void m5op_exit(uint64_t delay_ns);
void m5op_fail(uint64_t delay_ns, uint64_t code);
void m5op_reset_stats(uint64_t delay_ns, uint64_t period_ns);
void m5op_dump_stats(uint64_t delay_ns, uint64_t period_ns);
void m5op_dump_reset_stats(uint64_t delay_ns, uint64_t period_ns);
void m5op_checkpoint(uint64_t delay_ns, uint64_t period_ns);
uint64_t m5op_write_file(const void *buffer, uint64_t length, uint64_t offset,
                         const char *host_name);
uint64_t m5op_read_file(void *buffer, uint64_t length, uint64_t offset);
void m5op_work_begin(uint64_t work_id, uint64_t thread_id);
void m5op_work_end(uint64_t work_id, uint64_t thread_id);
/* Ask the simulator script to switch CPU models (the run script's "switchcpu" exit). */
void m5op_switch_cpu(void);

/* ---- backend-aware calls ---- */

/* The backend: PIMCLOUD_BACKEND in the environment, else pimcloud.backend= in
 * /proc/cmdline, else native.  Decided once per process. */
enum m5_backend m5_backend(void);
/* "gem5", "qemu" or "native". */
const char *m5_backend_name(enum m5_backend backend);
/* Parse a kernel command line; native when it names no (known) backend. */
enum m5_backend m5_backend_from_cmdline(const char *cmdline);
/* The backend /proc/cmdline names, whatever the environment says. */
enum m5_backend m5_backend_of_kernel(void);
/* For tests: forget the decided backend so the next m5_backend() decides again. */
void m5_backend_reset(void);

/* Each returns 0 on success and -errno on failure (exit/fail return only on failure). */
int m5_exit(uint64_t delay_ns);
int m5_fail(uint64_t delay_ns, uint64_t code);
int m5_reset_stats(uint64_t delay_ns, uint64_t period_ns);
int m5_dump_stats(uint64_t delay_ns, uint64_t period_ns);
int m5_dump_reset_stats(uint64_t delay_ns, uint64_t period_ns);
int m5_checkpoint(uint64_t delay_ns, uint64_t period_ns);
int m5_work_begin(uint64_t work_id, uint64_t thread_id);
int m5_work_end(uint64_t work_id, uint64_t thread_id);
/* gem5: hand the CPUs to the detailed models now (fast-forward ends here); elsewhere a
 * logged no-op.  The arguments are ignored (the command's uniform shape). */
int m5_switch_cpu(uint64_t unused_a, uint64_t unused_b);

/* Read up to length bytes of the host's file at offset: bytes read (0 at its end) or -errno. */
int64_t m5_read_file(void *buffer, uint64_t length, uint64_t offset);
/* Write length bytes at offset into the host file host_name (relative, no ".."): bytes
 * written or -errno.  Offset 0 truncates the host file first, as gem5 does. */
int64_t m5_write_file(const void *buffer, uint64_t length, uint64_t offset,
                      const char *host_name);

#ifdef __cplusplus
}
#endif

#endif /* PIMCLOUD_M5OPS_H */
