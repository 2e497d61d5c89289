/* The register interface of the PimCounters device: the one home of the contract between
 * the gem5 device (counters_model.hh, pim_counters.cc) and the guest driver
 * (guest/driver/pimcloud_counters.c). Plain C so that both a C++17 gem5 build and the
 * Linux kernel include it.
 *
 * Every register is 8 bytes, little endian, read and written with aligned 8-byte
 * accesses (the driver uses readq/writeq). The board describes the block to the guest
 * with an ACPI table of signature PIMCLOUD_COUNTERS_ACPI_SIGNATURE whose body is
 * struct pimcloud_counters_acpi_body (after the 36-byte ACPI header).
 *
 * Page-access counters: one per 4 KiB frame of each stack, counting the reads and writes
 * that reach the stack's memory (after every cache). A count halves every decay period.
 * A query asks for the n hottest frames of one stack; the answer is ready after a
 * modelled scan time (QUERY_STATUS), then read from the result window.
 *
 * Per-CPU miss counters: requests of a CPU that reach memory, and the sum over them of
 * the cycles (of that CPU's clock) each stayed outstanding below the caches.
 *
 * Per-CPU bandwidth throttle: level 0 is off; level l > 0 spaces the CPU's memory
 * requests at least l * THROTTLE_STEP_PS apart (like Intel MBA's delay values).
 */
#ifndef PIMCLOUD_PIM_COUNTERS_ABI_H
#define PIMCLOUD_PIM_COUNTERS_ABI_H

#define PIMCLOUD_COUNTERS_ACPI_SIGNATURE "PIMC"
#define PIMCLOUD_COUNTERS_MAGIC 0x3152544e434d4950ULL /* "PIMCNTR1", little endian */

/* Global registers. */
#define PIMC_MAGIC 0x000           /* r: PIMCLOUD_COUNTERS_MAGIC */
#define PIMC_NUM_STACKS 0x008      /* r: stacks with page counters */
#define PIMC_NUM_CPUS 0x010        /* r: CPUs with miss counters and a throttle */
#define PIMC_MAX_QUERY 0x018       /* r: most entries one query returns */
#define PIMC_FRAME_SHIFT 0x020     /* r: log2 of the frame size (12) */
#define PIMC_DECAY_PERIOD_PS 0x028 /* rw: counts halve every period; 0 = never */
#define PIMC_THROTTLE_LEVELS 0x030 /* r: levels 0..LEVELS-1 */
#define PIMC_THROTTLE_STEP_PS 0x038 /* r: request spacing added per level */
#define PIMC_QUERY_N 0x040         /* rw: frames asked for (1..MAX_QUERY) */
#define PIMC_QUERY_STACK 0x048     /* rw: stack asked about (0..NUM_STACKS-1) */
#define PIMC_QUERY_CMD 0x050       /* w: a PIMC_CMD_* value starts it */
#define PIMC_QUERY_STATUS 0x058    /* r: a PIMC_STATUS_* value */
#define PIMC_QUERY_RESULTS 0x060   /* r: entries in the result window once DONE */
#define PIMC_NOW_PS 0x068          /* r: the device's clock (simulated picoseconds) */
#define PIMC_QUERY_READY_PS 0x070  /* r: when the last query's answer is ready */

/* Per-stack registers: PIMC_STACK_BASE + stack * PIMC_STACK_STRIDE + offset. */
#define PIMC_STACK_BASE 0x400
#define PIMC_STACK_STRIDE 0x20
#define PIMC_STACK_FRAMES 0x00     /* r: frames counted on this stack */
#define PIMC_STACK_NODE 0x08       /* r: the stack's NUMA node in the guest */
#define PIMC_STACK_MAX_STACKS 32

/* Per-CPU registers: PIMC_CPU_BASE + cpu * PIMC_CPU_STRIDE + offset. */
#define PIMC_CPU_BASE 0x1000
#define PIMC_CPU_STRIDE 0x20
#define PIMC_CPU_MISSES 0x00       /* r: requests that reached memory */
#define PIMC_CPU_OUTSTANDING 0x08  /* r: sum of their outstanding cycles */
#define PIMC_CPU_CYCLES 0x10       /* r: the CPU's clock, in its cycles */
#define PIMC_CPU_THROTTLE 0x18     /* rw: throttle level */
#define PIMC_CPU_MAX_CPUS 512

/* Result window: entry i at PIMC_RESULT_BASE + i * 16: word 0 the physical frame
 * number, word 1 the count (bits 0-31), the first CPU that touched the frame (bits
 * 32-47, PIMC_NO_CPU when only non-CPU requestors did) and PIMC_FRAME_* flags (48-55).
 * Entries come hottest first; equal counts in frame order. */
#define PIMC_RESULT_BASE 0x10000
#define PIMC_RESULT_STRIDE 16
#define PIMC_NO_CPU 0xFFFFU
#define PIMC_FRAME_WRITTEN 0x1U    /* a write or a request for a writable copy arrived */
#define PIMC_FRAME_SHARED 0x2U     /* more than one CPU touched the frame */

#define PIMC_CMD_HOTTEST 1         /* the QUERY_N hottest frames of QUERY_STACK */
#define PIMC_CMD_RESET 2           /* clear QUERY_STACK's counts, owners and flags */

#define PIMC_STATUS_IDLE 0
#define PIMC_STATUS_BUSY 1         /* the scan is still running */
#define PIMC_STATUS_DONE 2
#define PIMC_STATUS_ERROR 3        /* bad stack, n or command: nothing was done */

/* The ACPI table's body: where the block is. */
struct pimcloud_counters_acpi_body {
    unsigned long long base;       /* physical address of the register block */
    unsigned long long size;       /* its length in bytes */
};

#endif /* PIMCLOUD_PIM_COUNTERS_ABI_H */
