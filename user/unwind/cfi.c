/* Unwind tables from call-frame information, through elfutils' libdw.
 *
 * libdw interprets the CFI (dwarf_cfi_addrframe executes an FDE's instructions up to a PC, with
 * the ABI's initial rules): here we only enumerate the FDEs (dwarf_next_cfi over the raw section;
 * decoding an FDE's address needs its CIE's pointer encoding) and walk each FDE row by row
 * (dwarf_frame_info gives the PC range of a row), classifying the rules into the few shapes the
 * BPF unwinder evaluates. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "unwind/cfi.h"
#include "sym/syms.h"
#include "sym/untrusted.h"

#define X86_64_RDI 5
#define X86_64_RBP 6
#define X86_64_RSP 7
#define X86_64_RA  16

struct seg {
	__u64 vaddr, off, filesz;
};

/* One FDE's code [lo, hi) (file offsets, below 4 GB) and its offset in the section: 12 bytes, ~100k
 * of them for the largest libraries.  The FDEs are listed first, then turned into rows in address
 * order, so the rows are written once, in order, with nothing held per row beside them. */
struct fde_ref {
	__u32 lo, hi, off;
};

/* An address space reserved for the worst case, touched as it fills. */
struct reserved {
	void *p;
	size_t nr, cap, len;
};

struct builder {
	struct seg segs[16]; /* executable PT_LOADs */
	int nr_segs;
	struct reserved refs; /* struct fde_ref */
	struct reserved rows; /* struct unw_row, in address order */
	__u32 prev_end;       /* the end of the code the last row covers */
	size_t fdes, unsupported;
	const volatile int *cancel;
	Dwarf_Off bounded_cie; /* the last CIE whose initial instructions were found bounded, +1 */
};

static int read_exec_segments(Elf *elf, struct builder *b)
{
	GElf_Phdr ph;
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (i = 0; i < n && b->nr_segs < (int)(sizeof(b->segs) / sizeof(b->segs[0])); i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		b->segs[b->nr_segs].vaddr = ph.p_vaddr;
		b->segs[b->nr_segs].off = ph.p_offset;
		b->segs[b->nr_segs].filesz = ph.p_filesz;
		b->nr_segs++;
	}
	return b->nr_segs ? 0 : -ENOENT;
}

/* Translates a vaddr range into file offsets; false when no executable segment holds lo. */
static bool to_offsets(const struct builder *b, __u64 lo, __u64 hi, __u64 *olo, __u64 *ohi)
{
	for (int i = 0; i < b->nr_segs; i++) {
		const struct seg *s = &b->segs[i];

		if (lo < s->vaddr || lo >= s->vaddr + s->filesz)
			continue;
		if (hi > s->vaddr + s->filesz)
			hi = s->vaddr + s->filesz;
		*olo = lo - s->vaddr + s->off;
		*ohi = hi - s->vaddr + s->off;
		return *ohi <= UINT32_MAX;
	}
	return false;
}

/* ---- rule classification ---- */

static void set_unsupported(struct unw_row *r)
{
	r->type = UNW_ROW_TYPE(UNW_CFA_UNSUPPORTED, UNW_FP_UNDEFINED);
	r->cfa_off = 0;
	r->fp_off = 0;
}

/* Offset n from the CFA as libdw describes a register saved there: DW_OP_call_frame_cfa,
 * then DW_OP_plus_uconst n (two's complement for negative n) unless n is 0. */
static bool cfa_offset_rule(const Dwarf_Op *ops, size_t nops, __s64 *off)
{
	if (nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	*off = nops == 2 ? (__s64)ops[1].number : 0;
	return nops == 1 || ops[1].atom == DW_OP_plus_uconst;
}

/* The PLT stubs' CFA, as binutils writes it for x86-64 lazy-binding PLTs:
 *   DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and; DW_OP_litN; DW_OP_ge;
 *   DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + 8, plus 8 past the stub's push (offset N in each 16-byte entry). */
static bool plt_expression(const Dwarf_Op *ops, size_t nops, int *threshold)
{
	static const __u8 want[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
				     DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };

	if (nops != sizeof(want))
		return false;
	for (size_t i = 0; i < nops; i++) {
		if (i == 4) {
			if (ops[i].atom < DW_OP_lit0 || ops[i].atom > DW_OP_lit15)
				return false;
			continue;
		}
		if (ops[i].atom != want[i])
			return false;
	}
	if (ops[0].number != 8 || ops[1].number != 0)
		return false;
	*threshold = ops[4].atom - DW_OP_lit0;
	return true;
}

static bool fits_scaled(__s64 v, __s64 min, __s64 max)
{
	return v % 8 == 0 && v / 8 >= min && v / 8 <= max;
}

static void classify_cfa(Dwarf_Frame *fr, struct unw_row *r)
{
	Dwarf_Op *ops;
	size_t nops;
	int thr;

	if (dwarf_frame_cfa(fr, &ops, &nops) || nops == 0) {
		set_unsupported(r);
		return;
	}
	if (nops == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == X86_64_RSP || ops[0].number == X86_64_RBP)) {
		__s64 off = (__s64)ops[0].number2;

		if (!fits_scaled(off, INT16_MIN, INT16_MAX)) {
			set_unsupported(r);
			return;
		}
		r->type = ops[0].number == X86_64_RSP ? UNW_CFA_SP : UNW_CFA_FP;
		r->cfa_off = off / 8;
	} else if (plt_expression(ops, nops, &thr)) {
		r->type = UNW_CFA_PLT;
		r->cfa_off = thr;
	} else if (nops == 2 && ops[0].atom == DW_OP_breg6 && ops[1].atom == DW_OP_deref &&
		   fits_scaled((__s64)ops[0].number, INT16_MIN, INT16_MAX)) {
		/* GCC's dynamic realignment: the CFA was saved below the frame pointer */
		r->type = UNW_CFA_DEREF_FP;
		r->cfa_off = (__s64)ops[0].number / 8;
	} else {
		set_unsupported(r);
	}
}

/* The register rule "the value is in register reg" (DW_CFA_register), as libdw gives it: the
 * register's value (DW_OP_bregx reg 0; DW_OP_stack_value), or the register itself. */
static bool in_register(const Dwarf_Op *ops, size_t nops, unsigned reg)
{
	if (nops == 2 && ops[0].atom == DW_OP_bregx && ops[0].number == reg && !ops[0].number2 &&
	    ops[1].atom == DW_OP_stack_value)
		return true;
	return nops == 1 && ((ops[0].atom == DW_OP_regx && ops[0].number == reg) ||
			     ops[0].atom == DW_OP_reg0 + reg);
}

/* Fills r from the frame state; returns false for rules the BPF unwinder cannot evaluate. */
static bool classify(Dwarf_Frame *fr, struct unw_row *r)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	__s64 off;
	bool signal = false, ra_rdi;
	int fp_rule;

	memset(r, 0, sizeof(*r));
	if (dwarf_frame_info(fr, NULL, NULL, &signal) < 0) {
		set_unsupported(r);
		return false;
	}
	if (signal) {
		/* a signal trampoline: its CFI describes the interrupted registers with expressions
		 * into the signal frame, whose layout the kernel fixes; the BPF side reads it */
		r->type = UNW_ROW_TYPE(UNW_CFA_SIGNAL, UNW_FP_SAME);
		return true;
	}
	/* The return address: always CFA - 8 on x86-64, or undefined in the outermost frame. */
	if (dwarf_frame_register(fr, X86_64_RA, mem, &ops, &nops))
		goto unsupported;
	if (nops == 0 && ops == mem) {
		r->type = UNW_ROW_TYPE(UNW_CFA_END, UNW_FP_UNDEFINED);
		return true;
	}
	/* glibc's __vfork keeps it in RDI across the syscall */
	ra_rdi = in_register(ops, nops, X86_64_RDI);
	if (!ra_rdi && (!cfa_offset_rule(ops, nops, &off) || off != -8))
		goto unsupported;

	/* The caller's frame pointer. */
	if (dwarf_frame_register(fr, X86_64_RBP, mem, &ops, &nops))
		goto unsupported;
	if (nops == 0 && !ops) {
		fp_rule = UNW_FP_SAME;
	} else if (nops == 0) {
		fp_rule = UNW_FP_UNDEFINED;
	} else if (cfa_offset_rule(ops, nops, &off) && fits_scaled(off, INT8_MIN, INT8_MAX)) {
		fp_rule = UNW_FP_SAVED;
		r->fp_off = off / 8;
	} else {
		/* RBP in another register or an expression: the caller's value is lost to us, but
		 * this frame still unwinds; callers that need it stop on a bad frame */
		fp_rule = UNW_FP_UNDEFINED;
	}

	classify_cfa(fr, r);
	if (UNW_ROW_CFA(r->type) == UNW_CFA_UNSUPPORTED)
		return false;
	if (ra_rdi) {
		/* fp_off is the saved frame pointer's: one of the two at most */
		if (r->type != UNW_CFA_SP || fp_rule == UNW_FP_SAVED)
			goto unsupported;
		r->type = UNW_CFA_SP_RA_RDI;
	}
	r->type = UNW_ROW_TYPE(r->type, fp_rule);
	return true;
unsupported:
	set_unsupported(r);
	return false;
}

static bool same_rule(const struct unw_row *a, const struct unw_row *b)
{
	return a->type == b->type && a->cfa_off == b->cfa_off && a->fp_off == b->fp_off;
}

/* Appends a row (room guaranteed by the caller), merging it with an identical predecessor. */
static void push_row(struct reserved *rows, __u64 pc, const struct unw_row *rule)
{
	struct unw_row *r = rows->p;

	if (rows->nr && same_rule(&r[rows->nr - 1], rule))
		return;
	if (rows->nr && r[rows->nr - 1].pc == pc) {
		/* an empty row (a zero-length range) replaced by the next one */
		r[rows->nr - 1] = *rule;
		r[rows->nr - 1].pc = pc;
		if (rows->nr > 1 && same_rule(&r[rows->nr - 2], rule))
			rows->nr--;
		return;
	}
	r[rows->nr] = *rule;
	r[rows->nr].pc = pc;
	rows->nr++;
}

/* The rule of code [lo, hi), which starts at or past the end of the rows so far. */
static int add_range(struct builder *b, __u64 lo, __u64 hi, const struct unw_row *rule)
{
	const struct unw_row none = { .type = UNW_ROW_TYPE(UNW_CFA_NONE, UNW_FP_UNDEFINED) };

	/* a gap row and this one, and room for the last row */
	if (b->rows.nr + 3 > b->rows.cap)
		return -E2BIG; /* more rows than instruction bytes: cannot happen */
	/* alignment padding between functions is never executed, nor a return address (those
	 * are looked up at the call, pc - 1): no row for it */
	if (b->rows.nr && lo >= (__u64)b->prev_end + 16)
		push_row(&b->rows, b->prev_end, &none);
	push_row(&b->rows, lo, rule);
	b->prev_end = hi;
	return 0;
}

/* Walks one FDE's rows from file offset from on (where an earlier FDE overlapping it ends): each
 * dwarf_cfi_addrframe gives the rules at pc and the range they hold.  lo is the FDE's vaddr.  An
 * FDE that libdw may not run (not runnable) is covered as unsupported. */
static int add_fde(struct builder *b, Dwarf_CFI *cfi, __u64 lo, const struct fde_ref *f,
		   __u32 from, bool runnable)
{
	__u64 pc = lo + (from - f->lo), hi = lo + (f->hi - f->lo);
	struct unw_row rule;
	int err;

	while (pc < hi) {
		Dwarf_Frame *fr = NULL;
		Dwarf_Addr s, e;

		if (b->cancel && *b->cancel)
			return -ECANCELED;
		if (!runnable || dwarf_cfi_addrframe(cfi, pc, &fr)) {
			/* libdw could not execute this FDE: cover the rest as unsupported */
			set_unsupported(&rule);
			b->unsupported++;
			return add_range(b, f->lo + (pc - lo), f->hi, &rule);
		}
		if (dwarf_frame_info(fr, &s, &e, NULL) < 0 || e <= pc || e > hi)
			e = hi;
		if (!classify(fr, &rule))
			b->unsupported++;
		free(fr);
		err = add_range(b, f->lo + (pc - lo), f->lo + (e - lo), &rule);
		if (err)
			return err;
		pc = e;
	}
	return 0;
}

/* ---- FDE enumeration ---- */

/* Reads a little-endian field of size 2, 4 or 8 bytes, sign-extended when is_signed. */
static int read_fixed(const __u8 **p, const __u8 *end, int size, bool is_signed, __u64 *out)
{
	__u64 v = 0;

	if (end - *p < size)
		return -EINVAL;
	memcpy(&v, *p, size);
	if (is_signed && size < 8 && (v >> (size * 8 - 1) & 1))
		v |= ~0ULL << (size * 8);
	*p += size;
	*out = v;
	return 0;
}

/* Reads an encoded pointer (DW_EH_PE_*); vaddr is the address of the encoded field itself. */
static int read_encoded(const __u8 **p, const __u8 *end, __u8 enc, __u64 vaddr, int addr_size,
			__u64 *out)
{
	const __u8 *q = *p;
	__u64 v = 0;
	int shift = 0;

	if (enc == DW_EH_PE_omit)
		return -EINVAL;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		if (read_fixed(&q, end, addr_size, false, &v))
			return -EINVAL;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		if (read_fixed(&q, end, 2, enc & DW_EH_PE_signed, &v))
			return -EINVAL;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		if (read_fixed(&q, end, 4, enc & DW_EH_PE_signed, &v))
			return -EINVAL;
		break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (read_fixed(&q, end, 8, false, &v))
			return -EINVAL;
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128: {
		__u8 byte;

		do {
			if (q >= end || shift > 63)
				return -EINVAL;
			byte = *q++;
			v |= (__u64)(byte & 0x7f) << shift;
			shift += 7;
		} while (byte & 0x80);
		if ((enc & 0x0f) == DW_EH_PE_sleb128 && shift < 64 && (byte & 0x40))
			v |= ~0ULL << shift;
		break;
	}
	default:
		return -EINVAL;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += vaddr;
		break;
	default:
		return -EINVAL; /* datarel/textrel/funcrel: not used for FDE addresses on x86-64 */
	}
	if (enc & DW_EH_PE_indirect)
		return -EINVAL;
	*p = q;
	*out = v;
	return 0;
}

/* The FDE pointer encoding ('R') of a CIE's "z..." augmentation; absptr without one. */
static int fde_encoding(const Dwarf_CIE *cie, int addr_size, __u8 *enc)
{
	const __u8 *d = cie->augmentation_data, *end = d + cie->augmentation_data_size;
	const char *aug = cie->augmentation;

	*enc = DW_EH_PE_absptr;
	if (!aug[0])
		return 0;
	if (aug[0] != 'z' || !d)
		return -EINVAL;
	for (aug++; *aug; aug++) {
		__u64 skip;

		switch (*aug) {
		case 'R':
			if (d >= end)
				return -EINVAL;
			*enc = *d++;
			return 0;
		case 'L':
			d++;
			break;
		case 'P':
			if (d >= end)
				return -EINVAL;
			{
				__u8 penc = *d++ & ~DW_EH_PE_indirect;

				/* the personality pointer's value does not matter, only its size */
				if (read_encoded(&d, end, penc & 0x0f, 0, addr_size, &skip))
					return -EINVAL;
			}
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return 0; /* unknown letters come after R in practice */
		}
	}
	return 0;
}

/* libdw sizes a frame's register array by the highest register a CIE or FDE gives a rule to, and
 * clears it (elfutils' enough_registers()): one crafted register number in a file costs up to
 * 2 GB, at every row.  It also copies the array at each DW_CFA_remember_state.  So a program is
 * handed to libdw only when its registers are below CFI_MAX_REGNO (x86-64's DWARF numbers end at
 * 145, APX's r31) and at most CFI_MAX_REMEMBERED states are remembered at once (compilers nest
 * one or two). */
#define CFI_MAX_REGNO 256
#define CFI_MAX_REMEMBERED 64

/* Operands of the DW_CFA_* opcodes below 0x40 that libdw runs (libdw refuses the others). */
static const struct cfa_operands {
	__u8 known, reg, lebs, fixed, block;
} cfa_ops[0x40] = {
	[DW_CFA_nop] = { 1 },
	[DW_CFA_set_loc] = { 1 }, /* an address in the FDE's encoding */
	[DW_CFA_advance_loc1] = { 1, .fixed = 1 },
	[DW_CFA_advance_loc2] = { 1, .fixed = 2 },
	[DW_CFA_advance_loc4] = { 1, .fixed = 4 },
	[DW_CFA_MIPS_advance_loc8] = { 1, .fixed = 8 },
	[DW_CFA_offset_extended] = { 1, 1, 1 },
	[DW_CFA_restore_extended] = { 1, 1 },
	[DW_CFA_undefined] = { 1, 1 },
	[DW_CFA_same_value] = { 1, 1 },
	[DW_CFA_register] = { 1, 1, 1 },
	[DW_CFA_remember_state] = { 1 },
	[DW_CFA_restore_state] = { 1 },
	[DW_CFA_def_cfa] = { 1, .lebs = 2 },
	[DW_CFA_def_cfa_register] = { 1, .lebs = 1 },
	[DW_CFA_def_cfa_offset] = { 1, .lebs = 1 },
	[DW_CFA_def_cfa_expression] = { 1, .block = 1 },
	[DW_CFA_expression] = { 1, 1, .block = 1 },
	[DW_CFA_offset_extended_sf] = { 1, 1, 1 },
	[DW_CFA_def_cfa_sf] = { 1, .lebs = 2 },
	[DW_CFA_def_cfa_offset_sf] = { 1, .lebs = 1 },
	[DW_CFA_val_offset] = { 1, 1, 1 },
	[DW_CFA_val_offset_sf] = { 1, 1, 1 },
	[DW_CFA_val_expression] = { 1, 1, .block = 1 },
	[DW_CFA_GNU_window_save] = { 1 },
	[DW_CFA_GNU_args_size] = { 1, .lebs = 1 },
	[DW_CFA_GNU_negative_offset_extended] = { 1, 1, 1 },
};

/* Whether libdw may run the CFA program [p, end) within the bounds above.  enc is the FDE pointer
 * encoding (DW_CFA_set_loc's operand).  Anything malformed is refused: libdw would refuse it too. */
static bool program_bounded(const __u8 *p, const __u8 *end, __u8 enc, int addr_size)
{
	int remembered = 0;
	__u64 v;

	while (p < end) {
		__u8 op = *p++;
		const struct cfa_operands *o;

		if (op >= 0x40) {
			/* advance_loc and restore: the operand (a register below 64) is in op;
			 * offset: and a ULEB128 */
			if ((op & 0xc0) == DW_CFA_offset &&
			    read_encoded(&p, end, DW_EH_PE_uleb128, 0, addr_size, &v))
				return false;
			continue;
		}
		o = &cfa_ops[op];
		if (!o->known)
			return false;
		if (op == DW_CFA_set_loc && read_encoded(&p, end, enc & 0x0f, 0, addr_size, &v))
			return false;
		if (op == DW_CFA_remember_state && ++remembered > CFI_MAX_REMEMBERED)
			return false;
		if (op == DW_CFA_restore_state && remembered)
			remembered--;
		if (o->reg && (read_encoded(&p, end, DW_EH_PE_uleb128, 0, addr_size, &v) ||
			       v >= CFI_MAX_REGNO))
			return false;
		for (int i = 0; i < o->lebs; i++)
			if (read_encoded(&p, end, DW_EH_PE_uleb128, 0, addr_size, &v))
				return false;
		if (o->block && (read_encoded(&p, end, DW_EH_PE_uleb128, 0, addr_size, &v) ||
				 v > (__u64)(end - p)))
			return false;
		if (end - p < o->fixed + (o->block ? (long)v : 0))
			return false;
		p += o->fixed + (o->block ? v : 0);
	}
	return true;
}

/* Whether libdw may run an FDE: its CIE's initial instructions and its own, which start after
 * the address range p points past (and the augmentation data of a "z" CIE). */
static bool fde_bounded(struct builder *b, const Dwarf_CFI_Entry *fde, const Dwarf_CFI_Entry *cie,
			const __u8 *p, __u8 enc, int addr_size)
{
	const __u8 *end = fde->fde.end;
	__u64 aug_len;

	if (cie->cie.augmentation[0] == 'z') {
		if (read_encoded(&p, end, DW_EH_PE_uleb128, 0, addr_size, &aug_len) ||
		    aug_len > (__u64)(end - p))
			return false;
		p += aug_len;
	}
	if (!program_bounded(p, end, enc, addr_size))
		return false;
	/* FDEs come grouped by CIE: each CIE is read once in the common case */
	if (b->bounded_cie == fde->fde.CIE_pointer + 1)
		return true;
	if (!program_bounded(cie->cie.initial_instructions, cie->cie.initial_instructions_end, enc,
			     addr_size))
		return false;
	b->bounded_cie = fde->fde.CIE_pointer + 1;
	return true;
}

static Elf_Scn *section_by_name(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *s;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, sh))
			continue;
		s = elf_strptr(elf, shstrndx, sh->sh_name);
		if (s && !strcmp(s, name))
			return sh->sh_type == SHT_NOBITS ? NULL : scn;
	}
	return NULL;
}

/* A CFI section's bytes, read by dwarf_next_cfi. */
struct cfi_section {
	const unsigned char *ident;
	Elf_Data *data;
	__u64 addr; /* the section's vaddr: .eh_frame's pc-relative addresses count from it */
	int addr_size;
	bool eh;
};

/* One FDE as read from its section. */
struct fde {
	Dwarf_CFI_Entry entry, cie;
	const __u8 *insns; /* past the address range */
	__u64 lo, len;     /* the code it describes (vaddr) */
	__u8 enc;          /* its pointer encoding */
};

static const char *section_name(const struct cfi_section *s)
{
	return s->eh ? ".eh_frame" : ".debug_frame";
}

/* The entry at off, and when it is an FDE, its CIE and code range.  1 at the end of the section,
 * 0 for an FDE (*next is the following entry), -ENOENT for a CIE, -EINVAL (why set) when corrupt. */
static int read_fde(const struct cfi_section *s, Dwarf_Off off, Dwarf_Off *next, struct fde *f,
		    char *why, size_t size)
{
	Dwarf_Off cie_next;
	const __u8 *end;
	int r;

	r = dwarf_next_cfi(s->ident, s->data, s->eh, off, next, &f->entry);
	if (r > 0)
		return 1;
	if (r < 0) {
		snprintf(why, size, "corrupt %s at offset %#llx: %s", section_name(s),
			 (unsigned long long)off, dwarf_errmsg(-1));
		return -EINVAL;
	}
	if (dwarf_cfi_cie_p(&f->entry))
		return -ENOENT;
	if (dwarf_next_cfi(s->ident, s->data, s->eh, f->entry.fde.CIE_pointer, &cie_next, &f->cie) ||
	    !dwarf_cfi_cie_p(&f->cie) || fde_encoding(&f->cie.cie, s->addr_size, &f->enc)) {
		snprintf(why, size, "corrupt %s: an FDE's CIE at offset %#llx is unreadable",
			 section_name(s), (unsigned long long)f->entry.fde.CIE_pointer);
		return -EINVAL;
	}
	if (!s->eh)
		f->enc = DW_EH_PE_absptr;
	f->insns = f->entry.fde.start;
	end = f->entry.fde.end;
	if (read_encoded(&f->insns, end, f->enc,
			 s->addr + (f->insns - (const __u8 *)s->data->d_buf), s->addr_size, &f->lo) ||
	    read_encoded(&f->insns, end, f->enc & 0x0f, 0, s->addr_size, &f->len)) {
		snprintf(why, size, "corrupt %s: unreadable FDE address at offset %#llx",
			 section_name(s), (unsigned long long)off);
		return -EINVAL;
	}
	return 0;
}

/* Lists the FDEs that describe code in the executable segments.  0, or -EINVAL (why set) for a
 * corrupt section, in which case nothing from it should be trusted. */
static int list_fdes(struct builder *b, const struct cfi_section *s, char *why, size_t size)
{
	struct fde_ref *refs = b->refs.p;
	Dwarf_Off off = 0, next;
	__u64 olo, ohi;
	struct fde f;
	int r;

	for (; (r = read_fde(s, off, &next, &f, why, size)) != 1; off = next) {
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		if (b->cancel && *b->cancel)
			return -ECANCELED;
		/* .debug_frame FDEs of functions the linker dropped keep address 0; empty ones and
		 * those for code outside the executable segments describe nothing */
		if ((!s->eh && f.lo == 0) || !f.len || f.lo + f.len < f.lo ||
		    !to_offsets(b, f.lo, f.lo + f.len, &olo, &ohi) || ohi <= olo)
			continue;
		if (b->refs.nr == b->refs.cap || off > UINT32_MAX) {
			/* more FDEs than their smallest size allows: cannot happen */
			snprintf(why, size, "%s: too many FDEs", section_name(s));
			return -E2BIG;
		}
		refs[b->refs.nr++] = (struct fde_ref){ .lo = olo, .hi = ohi, .off = off };
		b->fdes++;
	}
	return 0;
}

static bool ref_before(const struct fde_ref *a, const struct fde_ref *b)
{
	return a->lo < b->lo || (a->lo == b->lo && a->off < b->off);
}

static void sift_down(struct fde_ref *r, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		struct fde_ref tmp;

		if (child + 1 < n && ref_before(&r[child], &r[child + 1]))
			child++;
		if (!ref_before(&r[root], &r[child]))
			return;
		tmp = r[root];
		r[root] = r[child];
		r[child] = tmp;
	}
}

/* Sorts the FDEs by address, those at one address in section order, without extra memory (most
 * come sorted, not all: 594 out of order in libLLVM). */
static void sort_fdes(struct fde_ref *r, size_t n)
{
	size_t i;

	for (i = 1; i < n && !ref_before(&r[i], &r[i - 1]); i++)
		;
	if (i >= n)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(r, i, n);
	while (n-- > 1) {
		struct fde_ref tmp = r[0];

		r[0] = r[n];
		r[n] = tmp;
		sift_down(r, 0, n);
	}
}

/* The listed FDEs' rows, in address order: gaps become UNW_CFA_NONE rows, and where FDEs overlap
 * the first one wins (the one at the lower address, then the one earlier in the section). */
static int add_fdes(struct builder *b, Dwarf_CFI *cfi, const struct cfi_section *s, char *why,
		    size_t size)
{
	const struct unw_row none = { .type = UNW_ROW_TYPE(UNW_CFA_NONE, UNW_FP_UNDEFINED) };
	const struct fde_ref *refs = b->refs.p;
	Dwarf_Off next;
	struct fde f;
	int err;

	for (size_t i = 0; i < b->refs.nr; i++) {
		const struct fde_ref *r = &refs[i];
		__u32 from = r->lo;

		if (b->rows.nr) {
			if (r->hi <= b->prev_end)
				continue;
			if (from < b->prev_end)
				from = b->prev_end;
		}
		/* listed, so it reads again: the section is the same bytes in memory */
		err = read_fde(s, r->off, &next, &f, why, size);
		if (err > 0 || err == -ENOENT)
			snprintf(why, size, "%s: no FDE at offset %#x", section_name(s), r->off);
		if (err)
			return err == -EINVAL ? err : -EINVAL;
		err = add_fde(b, cfi, f.lo, r, from,
			      fde_bounded(b, &f.entry, &f.cie, f.insns, f.enc, s->addr_size));
		if (err == -E2BIG)
			snprintf(why, size, "%s: more rows than instruction bytes", section_name(s));
		if (err)
			return err;
	}
	if (b->rows.nr)
		push_row(&b->rows, b->prev_end, &none); /* room: add_range keeps it */
	return 0;
}

/* Adds every FDE of one CFI section.  Returns 0, or -EINVAL (why set) for a corrupt section, in
 * which case nothing from it should be trusted. */
static int add_section(struct builder *b, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		       Dwarf_CFI *cfi, bool eh, char *why, size_t size)
{
	struct cfi_section s = {
		.ident = (const unsigned char *)elf_getident(elf, NULL), .addr = sh->sh_addr, .eh = eh,
	};
	int err;

	s.addr_size = s.ident && s.ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
		snprintf(why, size, "cannot decompress %s", section_name(&s));
		return -EINVAL;
	}
	s.data = elf_getdata(scn, NULL);
	if (!s.data || !s.data->d_buf || !s.ident) {
		snprintf(why, size, "cannot read %s", section_name(&s));
		return -EINVAL;
	}
	err = list_fdes(b, &s, why, size);
	if (err)
		return err;
	sort_fdes(b->refs.p, b->refs.nr);
	return add_fdes(b, cfi, &s, why, size);
}

/* Reserves room for cap elements of size each; pages are only used as they are touched. */
static int reserve(struct reserved *r, size_t cap, size_t size)
{
	size_t page = sysconf(_SC_PAGESIZE), len = (cap * size + page - 1) / page * page;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		*r = (struct reserved){ 0 };
		return -ENOMEM;
	}
	*r = (struct reserved){ .p = p, .cap = cap, .len = len };
	return 0;
}

static void unreserve(struct reserved *r)
{
	if (r->p)
		munmap(r->p, r->len);
	*r = (struct reserved){ 0 };
}

/* Room for the rows and FDEs a CFI section of size bytes can hold: an instruction byte at least
 * per row (a row of UNW_CFA_NONE at most beside each), 8 bytes at least per FDE. */
static int builder_reserve(struct builder *b, size_t size)
{
	int err = reserve(&b->rows, 2 * size + 3, sizeof(struct unw_row));

	return err ?: reserve(&b->refs, size / 8 + 1, sizeof(struct fde_ref));
}

static void builder_free(struct builder *b)
{
	unreserve(&b->rows);
	unreserve(&b->refs);
	b->prev_end = 0;
}

/* The rows become out's: the pages past them go back. */
static void builder_give_rows(struct builder *b, struct cfi_rows *out)
{
	size_t page = sysconf(_SC_PAGESIZE);
	size_t used = (b->rows.nr * sizeof(struct unw_row) + page - 1) / page * page;

	if (used < b->rows.len)
		madvise((char *)b->rows.p + used, b->rows.len - used, MADV_DONTNEED);
	out->rows = b->rows.p;
	out->nr = b->rows.nr;
	out->map_len = b->rows.len;
	out->map_off = 0;
	b->rows = (struct reserved){ 0 };
}

/* Adds one CFI section of elf; 0, -ENOENT when it has none, -EINVAL when corrupt. */
static int try_section(struct builder *b, Elf *elf, bool eh, char *why, size_t size)
{
	Dwarf_CFI *cfi = NULL;
	Dwarf *dw = NULL;
	GElf_Shdr sh;
	Elf_Scn *scn;
	int err;

	scn = section_by_name(elf, eh ? ".eh_frame" : ".debug_frame", &sh);
	if (!scn || !sh.sh_size)
		return -ENOENT;
	/* the section size bounds the rows and FDEs (a compressed .debug_frame inflates: allow
	 * for it) */
	builder_free(b);
	b->fdes = b->unsupported = 0;
	b->bounded_cie = 0;
	err = builder_reserve(b, sh.sh_flags & SHF_COMPRESSED ? sh.sh_size * 16 : sh.sh_size);
	if (err)
		return err;
	if (eh) {
		cfi = dwarf_getcfi_elf(elf);
	} else {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		cfi = dw ? dwarf_getcfi(dw) : NULL;
	}
	if (!cfi) {
		snprintf(why, size, "libdw cannot read %s: %s", eh ? ".eh_frame" : ".debug_frame",
			 dwarf_errmsg(-1));
		err = -EINVAL;
		goto cleanup;
	}
	err = add_section(b, elf, scn, &sh, cfi, eh, why, size);
	if (!err && !b->fdes) {
		snprintf(why, size, "%s has no FDE for executable code", eh ? ".eh_frame" : ".debug_frame");
		err = -ENOENT;
	}
cleanup:
	if (eh && cfi)
		dwarf_cfi_end(cfi);
	if (dw)
		dwarf_end(dw);
	return err;
}

int cfi_build(Elf *elf, Elf *debug_elf, const volatile int *cancel, struct cfi_rows *out,
	      char *why, size_t size)
{
	struct builder b = { .cancel = cancel };
	char eh_why[256] = "";
	int err;

	memset(out, 0, sizeof(*out));
	snprintf(why, size, "no .eh_frame or .debug_frame");
	if (elf_kind(elf) != ELF_K_ELF) {
		snprintf(why, size, "not an ELF file");
		return -EINVAL;
	}
	if (read_exec_segments(elf, &b)) {
		snprintf(why, size, "no executable segment");
		return -ENOENT;
	}
	err = try_section(&b, elf, true, eh_why, sizeof(eh_why));
	out->source = ".eh_frame";
	if (err == -ENOMEM || err == -ECANCELED)
		goto cleanup;
	if (err) {
		/* a corrupt section may have half-added FDEs: try_section starts over */
		err = try_section(&b, elf, false, why, size);
		out->source = ".debug_frame";
		if (err && err != -ENOMEM && debug_elf) {
			err = try_section(&b, debug_elf, false, why, size);
			out->source = "debug file .debug_frame";
		}
		/* the .eh_frame problem is the one to tell when nothing else helped */
		if (err && eh_why[0])
			snprintf(why, size, "%s", eh_why);
	}
	if (err)
		goto cleanup;
	builder_give_rows(&b, out);
	if (out->nr > UNWIND_MAX_TABLE_ROWS) {
		snprintf(why, size, "%zu rows: more than the %u a table may hold", out->nr,
			 UNWIND_MAX_TABLE_ROWS);
		err = -E2BIG;
	}
	out->fdes = b.fdes;
	out->unsupported = b.unsupported;
cleanup:
	if (err == -ENOMEM)
		snprintf(why, size, "out of memory");
	if (err == -ECANCELED)
		snprintf(why, size, "cancelled");
	builder_free(&b);
	if (err)
		cfi_rows_free(out);
	return err;
}

static bool has_section(Elf *elf, const char *name)
{
	GElf_Shdr sh;

	return section_by_name(elf, name, &sh) && sh.sh_size;
}

int cfi_build_file(const char *path, int fd, const volatile int *cancel, struct cfi_rows *out,
		   char *why, size_t size)
{
	/* without the symbolizer's fd (it had none, or a test): by name, as an untrusted file */
	static const struct file_rules by_name;
	Elf *elf = NULL, *delf = NULL;
	int own_fd = -1, dfd = -1, err;
	enum file_refusal refusal;
	struct stat st;

	if (fd < 0) {
		fd = own_fd = untrusted_open(AT_FDCWD, path, FILE_MAPPED, &by_name, &st, &refusal);
		if (fd < 0) {
			err = fd;
			snprintf(why, size, "cannot open: %s", err == -EPERM ?
				 file_refusal_str(FILE_MAPPED, refusal) : strerror(-err));
			memset(out, 0, sizeof(*out));
			return err;
		}
	} else if (fstat(fd, &st)) {
		err = -errno;
		snprintf(why, size, "cannot stat: %s", strerror(-err));
		memset(out, 0, sizeof(*out));
		return err;
	}
	elf = untrusted_elf(fd);
	if (!elf) {
		snprintf(why, size, "not an ELF file: %s", elf_errmsg(-1));
		memset(out, 0, sizeof(*out));
		err = -EINVAL;
		goto cleanup;
	}
	/* a separate debug file is only worth finding when the file has no usable .eh_frame */
	if (!has_section(elf, ".eh_frame") && !has_section(elf, ".debug_frame")) {
		dfd = debuginfo_open(elf, path, st.st_uid);
		if (dfd >= 0)
			delf = untrusted_elf(dfd);
	}
	err = cfi_build(elf, delf, cancel, out, why, size);
	if (err == -EINVAL && !delf) {
		/* corrupt .eh_frame: the debug file may still describe the code */
		dfd = debuginfo_open(elf, path, st.st_uid);
		if (dfd >= 0 && (delf = untrusted_elf(dfd)))
			err = cfi_build(elf, delf, cancel, out, why, size);
	}
cleanup:
	elf_end(delf);
	elf_end(elf);
	if (dfd >= 0)
		close(dfd);
	if (own_fd >= 0)
		close(own_fd);
	return err;
}

int cfi_build_mem(const void *image, size_t len, struct cfi_rows *out, char *why, size_t size)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, len);
	if (!elf) {
		snprintf(why, size, "not an ELF image: %s", elf_errmsg(-1));
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	err = cfi_build(elf, NULL, NULL, out, why, size);
	elf_end(elf);
	return err;
}

const struct unw_row *cfi_find(const struct unw_row *rows, size_t nr, __u32 off)
{
	size_t base = 0, len = nr, half;

	/* the BPF side's search (unwind_find_row()), so the tests exercise it */
	if (!nr)
		return NULL;
	while (len > 1) {
		half = len / 2;
		if (rows[base + half].pc <= off)
			base += half;
		len -= half;
	}
	return rows[base].pc <= off ? &rows[base] : NULL;
}

const char *cfi_row_str(const struct unw_row *r, char *buf, size_t size)
{
	static const char *const fp[] = { "same", "saved", "undef" };
	int n, rule = UNW_ROW_FP(r->type);

	switch (UNW_ROW_CFA(r->type)) {
	case UNW_CFA_NONE:
		return snprintf(buf, size, "none"), buf;
	case UNW_CFA_END:
		return snprintf(buf, size, "end"), buf;
	case UNW_CFA_UNSUPPORTED:
		return snprintf(buf, size, "unsupported"), buf;
	case UNW_CFA_SIGNAL:
		return snprintf(buf, size, "signal frame"), buf;
	case UNW_CFA_SP:
		n = snprintf(buf, size, "cfa=sp%+d", r->cfa_off * 8);
		break;
	case UNW_CFA_FP:
		n = snprintf(buf, size, "cfa=fp%+d", r->cfa_off * 8);
		break;
	case UNW_CFA_PLT:
		n = snprintf(buf, size, "cfa=plt%d", r->cfa_off);
		break;
	case UNW_CFA_DEREF_FP:
		n = snprintf(buf, size, "cfa=*(fp%+d)", r->cfa_off * 8);
		break;
	case UNW_CFA_SP_RA_RDI:
		n = snprintf(buf, size, "cfa=sp%+d ra=rdi", r->cfa_off * 8);
		break;
	default:
		return snprintf(buf, size, "bad type %#x", r->type), buf;
	}
	if (n < 0 || (size_t)n >= size)
		return buf;
	if (rule == UNW_FP_SAVED)
		snprintf(buf + n, size - n, " fp=cfa%+d", r->fp_off * 8);
	else
		snprintf(buf + n, size - n, " fp=%s", rule < 3 ? fp[rule] : "?");
	return buf;
}

void cfi_rows_free(struct cfi_rows *r)
{
	if (!r)
		return;
	if (r->rows)
		munmap((char *)r->rows - r->map_off, r->map_len);
	memset(r, 0, sizeof(*r));
}
