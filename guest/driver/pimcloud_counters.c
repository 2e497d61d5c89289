// SPDX-License-Identifier: GPL-2.0
/*
 * pimcloud_counters: the guest side of the PimCounters device (gem5 scons-extra), built
 * into the bundle's kernel. It finds the device through the ACPI "PIMC" table and gives
 * user space one misc device, /dev/pimcloud_counters: write a command line, then read
 * the answer as text lines from the same open file.
 *
 *   info                    counted memories (node, frames), CPUs, throttle levels
 *   hottest N NODE          the N most-accessed frames of NODE's memory, hottest first:
 *                           "pfn count private|shared ro|rw cpu pid vaddr" (the paper's
 *                           hot-page call; pid and vaddr of one mapping, "-" if none)
 *   cpus                    per CPU: "cpu misses outstanding_cycles cycles throttle"
 *   throttle CPU LEVEL      set a CPU's bandwidth throttle level (0 = off)
 *   decay PICOSECONDS       counts halve once per period (0 = never)
 *   reset NODE              clear NODE's page counts, first CPUs and types
 *   whois PFN               the process and virtual page mapping a frame (no device
 *                           needed: the reverse map the hottest answer uses)
 *
 * Without the table (QEMU, or gem5 without counters) every command but whois answers
 * "error: no PimCounters device" and the boot log says so once. The register map is
 * pim_counters_abi.h, the one home of the contract with the device.
 */
#include <linux/acpi.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/memory_hotplug.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/rmap.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "pim_counters_abi.h"

#define ANSWER_LIMIT (1 << 20) /* bytes of one answer: 4096 frames at ~80 bytes each */
#define QUERY_TIMEOUT_US 100000 /* a scan takes ~1 ns per frame: far below this */

static void __iomem *regs;
static u64 num_stacks, num_cpus, max_query;
static DEFINE_MUTEX(counters_lock); /* the query registers are shared by every opener */

struct answer {
	char *text;
	size_t length;
};

static u64 reg_read(u64 offset)
{
	return readq(regs + offset);
}

static void reg_write(u64 offset, u64 value)
{
	writeq(value, regs + offset);
}

static __printf(2, 3) void say(struct answer *a, const char *fmt, ...)
{
	va_list args;

	if (a->length >= ANSWER_LIMIT)
		return;
	va_start(args, fmt);
	a->length += vscnprintf(a->text + a->length, ANSWER_LIMIT - a->length, fmt, args);
	va_end(args);
}

/* ---------------------------------------------------------------- reverse map */

struct mapping {
	unsigned long pfn;
	pid_t pid;
	unsigned long vaddr;
};

static bool found_mapping(struct folio *folio, struct vm_area_struct *vma,
			  unsigned long addr, void *arg)
{
	struct mapping *m = arg;
	struct task_struct *owner;

	m->vaddr = addr + ((m->pfn - folio_pfn(folio)) << PAGE_SHIFT);
	m->pid = 0;
#ifdef CONFIG_MEMCG
	rcu_read_lock();
	owner = rcu_dereference(vma->vm_mm->owner);
	if (owner)
		m->pid = task_tgid_nr(owner);
	rcu_read_unlock();
#endif
	return false; /* one mapping is enough */
}

/* One process and virtual address mapping the frame, or pid 0. Never sleeps on a lock
 * another path holds: a frame whose folio or mapping is busy is reported unmapped. */
static struct mapping who_maps(unsigned long pfn)
{
	struct mapping m = { .pfn = pfn };
	struct rmap_walk_control rwc = {
		.arg = &m,
		.try_lock = true,
		.rmap_one = found_mapping,
	};
	struct page *page = pfn_to_online_page(pfn);
	struct folio *folio;

	if (!page)
		return m;
	folio = page_folio(page);
	if (!folio_try_get(folio))
		return m;
	if (folio_mapped(folio) && !folio_test_ksm(folio) && folio_trylock(folio)) {
		if (folio_mapped(folio))
			rmap_walk(folio, &rwc);
		folio_unlock(folio);
	}
	folio_put(folio);
	return m;
}

static void say_mapping(struct answer *a, unsigned long pfn)
{
	struct mapping m = who_maps(pfn);

	if (m.vaddr)
		say(a, " %d %#lx\n", m.pid, m.vaddr);
	else
		say(a, " - -\n");
}

/* ---------------------------------------------------------------- commands */

static int stack_of_node(u64 node)
{
	u64 s;

	for (s = 0; s < num_stacks; s++)
		if (reg_read(PIMC_STACK_BASE + s * PIMC_STACK_STRIDE + PIMC_STACK_NODE) == node)
			return s;
	return -1;
}

static void do_info(struct answer *a)
{
	u64 s;

	say(a, "stacks %llu cpus %llu max_query %llu throttle_levels %llu "
	    "throttle_step_ps %llu decay_period_ps %llu\n", num_stacks, num_cpus, max_query,
	    reg_read(PIMC_THROTTLE_LEVELS), reg_read(PIMC_THROTTLE_STEP_PS),
	    reg_read(PIMC_DECAY_PERIOD_PS));
	for (s = 0; s < num_stacks; s++)
		say(a, "stack %llu node %llu frames %llu\n", s,
		    reg_read(PIMC_STACK_BASE + s * PIMC_STACK_STRIDE + PIMC_STACK_NODE),
		    reg_read(PIMC_STACK_BASE + s * PIMC_STACK_STRIDE + PIMC_STACK_FRAMES));
}

static void do_hottest(struct answer *a, u64 n, u64 node)
{
	int stack = stack_of_node(node);
	u64 status, i, results, start = reg_read(PIMC_NOW_PS);
	unsigned int waited = 0;

	if (stack < 0) {
		say(a, "error: node %llu has no page counters (see `info`)\n", node);
		return;
	}
	if (n == 0 || n > max_query) {
		say(a, "error: ask for 1..%llu frames, not %llu\n", max_query, n);
		return;
	}
	reg_write(PIMC_QUERY_N, n);
	reg_write(PIMC_QUERY_STACK, stack);
	reg_write(PIMC_QUERY_CMD, PIMC_CMD_HOTTEST);
	while ((status = reg_read(PIMC_QUERY_STATUS)) == PIMC_STATUS_BUSY &&
	       waited < QUERY_TIMEOUT_US) {
		udelay(1);
		waited++;
	}
	if (status != PIMC_STATUS_DONE) {
		say(a, "error: the device answered status %llu\n", status);
		return;
	}
	results = reg_read(PIMC_QUERY_RESULTS);
	/* The first line: how many, and the simulated time the device took to answer. */
	say(a, "frames %llu node %llu scan_ps %llu\n", results, node,
	    reg_read(PIMC_QUERY_READY_PS) - start);
	for (i = 0; i < results; i++) {
		u64 base = PIMC_RESULT_BASE + i * PIMC_RESULT_STRIDE;
		u64 pfn = reg_read(base), word = reg_read(base + 8);
		u64 flags = (word >> 48) & 0xFF, cpu = (word >> 32) & 0xFFFF;

		say(a, "%#llx %llu %s %s", pfn, word & 0xFFFFFFFFULL,
		    flags & PIMC_FRAME_SHARED ? "shared" : "private",
		    flags & PIMC_FRAME_WRITTEN ? "rw" : "ro");
		if (cpu == PIMC_NO_CPU)
			say(a, " -");
		else
			say(a, " %llu", cpu);
		say_mapping(a, pfn);
	}
}

static void do_reset(struct answer *a, u64 node)
{
	int stack = stack_of_node(node);

	if (stack < 0) {
		say(a, "error: node %llu has no page counters (see `info`)\n", node);
		return;
	}
	reg_write(PIMC_QUERY_STACK, stack);
	reg_write(PIMC_QUERY_CMD, PIMC_CMD_RESET);
	say(a, "ok reset node %llu status %llu\n", node, reg_read(PIMC_QUERY_STATUS));
}

static void do_cpus(struct answer *a)
{
	u64 c;

	for (c = 0; c < num_cpus; c++) {
		u64 base = PIMC_CPU_BASE + c * PIMC_CPU_STRIDE;

		say(a, "%llu %llu %llu %llu %llu\n", c, reg_read(base + PIMC_CPU_MISSES),
		    reg_read(base + PIMC_CPU_OUTSTANDING), reg_read(base + PIMC_CPU_CYCLES),
		    reg_read(base + PIMC_CPU_THROTTLE));
	}
}

static void do_throttle(struct answer *a, u64 cpu, u64 level)
{
	u64 reg = PIMC_CPU_BASE + cpu * PIMC_CPU_STRIDE + PIMC_CPU_THROTTLE;

	if (cpu >= num_cpus || level >= reg_read(PIMC_THROTTLE_LEVELS)) {
		say(a, "error: CPU %llu level %llu: CPUs are 0..%llu, levels 0..%llu\n", cpu,
		    level, num_cpus - 1, reg_read(PIMC_THROTTLE_LEVELS) - 1);
		return;
	}
	reg_write(reg, level);
	say(a, "ok cpu %llu throttle %llu\n", cpu, reg_read(reg));
}

static void run_command(struct answer *a, char *line)
{
	char verb[16];
	u64 x = 0, y = 0;
	int fields = sscanf(line, "%15s %llu %llu", verb, &x, &y);

	if (fields >= 2 && !strcmp(verb, "whois")) {
		say(a, "%#llx", x);
		say_mapping(a, x);
		return;
	}
	if (fields < 1) {
		say(a, "error: empty command\n");
		return;
	}
	if (!regs) {
		say(a, "error: no PimCounters device (no ACPI PIMC table: QEMU, or a gem5 board "
		    "without counters)\n");
		return;
	}
	mutex_lock(&counters_lock);
	if (!strcmp(verb, "info"))
		do_info(a);
	else if (!strcmp(verb, "hottest") && fields == 3)
		do_hottest(a, x, y);
	else if (!strcmp(verb, "cpus"))
		do_cpus(a);
	else if (!strcmp(verb, "reset") && fields == 2)
		do_reset(a, x);
	else if (!strcmp(verb, "throttle") && fields == 3)
		do_throttle(a, x, y);
	else if (!strcmp(verb, "decay") && fields == 2) {
		reg_write(PIMC_DECAY_PERIOD_PS, x);
		say(a, "ok decay_period_ps %llu\n", reg_read(PIMC_DECAY_PERIOD_PS));
	} else
		say(a, "error: unknown command '%s': info, hottest N NODE, cpus, throttle CPU "
		    "LEVEL, decay PS, reset NODE, whois PFN\n", verb);
	mutex_unlock(&counters_lock);
}

/* ---------------------------------------------------------------- the file */

static int counters_open(struct inode *inode, struct file *file)
{
	struct answer *a = kzalloc(sizeof(*a), GFP_KERNEL);

	if (!a)
		return -ENOMEM;
	file->private_data = a;
	return 0;
}

static int counters_release(struct inode *inode, struct file *file)
{
	struct answer *a = file->private_data;

	vfree(a->text);
	kfree(a);
	return 0;
}

static ssize_t counters_write(struct file *file, const char __user *buf, size_t count,
			      loff_t *pos)
{
	struct answer *a = file->private_data;
	char line[64];

	if (count >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, buf, count))
		return -EFAULT;
	line[count] = '\0';
	if (!a->text) {
		a->text = vmalloc(ANSWER_LIMIT);
		if (!a->text)
			return -ENOMEM;
	}
	a->length = 0;
	run_command(a, line);
	*pos = 0; /* the answer is read from its start (ksys_write stores it in f_pos) */
	return count;
}

static ssize_t counters_read(struct file *file, char __user *buf, size_t count, loff_t *pos)
{
	struct answer *a = file->private_data;

	if (!a->text)
		return 0;
	return simple_read_from_buffer(buf, count, pos, a->text, a->length);
}

static const struct file_operations counters_fops = {
	.owner = THIS_MODULE,
	.open = counters_open,
	.release = counters_release,
	.write = counters_write,
	.read = counters_read,
	.llseek = no_llseek,
};

static struct miscdevice counters_device = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "pimcloud_counters",
	.fops = &counters_fops,
	.mode = 0600,
};

static void __init find_device(void)
{
	struct acpi_table_header *table;
	struct pimcloud_counters_acpi_body *body;

	if (ACPI_FAILURE(acpi_get_table(PIMCLOUD_COUNTERS_ACPI_SIGNATURE, 0, &table))) {
		pr_info("pimcloud_counters: no ACPI PIMC table: no hardware counters "
			"(QEMU, or a gem5 board without counters); whois still works\n");
		return;
	}
	if (table->length < sizeof(*table) + sizeof(*body)) {
		pr_err("pimcloud_counters: PIMC table of %u bytes is too short\n", table->length);
		goto out;
	}
	body = (void *)table + sizeof(*table);
	regs = ioremap(body->base, body->size);
	if (!regs) {
		pr_err("pimcloud_counters: cannot map %llu bytes at %#llx\n", body->size, body->base);
		goto out;
	}
	if (reg_read(PIMC_MAGIC) != PIMCLOUD_COUNTERS_MAGIC) {
		pr_err("pimcloud_counters: no PimCounters registers at %#llx\n", body->base);
		iounmap(regs);
		regs = NULL;
		goto out;
	}
	num_stacks = reg_read(PIMC_NUM_STACKS);
	num_cpus = reg_read(PIMC_NUM_CPUS);
	max_query = reg_read(PIMC_MAX_QUERY);
	pr_info("pimcloud_counters: %llu counted memories, %llu CPUs at %#llx\n", num_stacks,
		num_cpus, body->base);
out:
	acpi_put_table(table);
}

static int __init counters_init(void)
{
	find_device();
	return misc_register(&counters_device);
}
device_initcall(counters_init);
