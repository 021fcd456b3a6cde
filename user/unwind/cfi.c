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

/* A PC range [lo, hi) (file offsets, below 4 GB) with one rule: 16 bytes, a few hundred thousand
 * of them for the largest binaries. */
struct span {
	__u32 lo, hi;
	struct unw_row rule; /* pc unused */
};

struct builder {
	struct seg segs[16]; /* executable PT_LOADs */
	int nr_segs;
	struct span *spans; /* address space reserved for the worst case, touched as it fills */
	size_t nr_spans, cap_spans, map_len;
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

static bool spans_sorted(const struct builder *b)
{
	for (size_t i = 1; i < b->nr_spans; i++)
		if (b->spans[i].lo < b->spans[i - 1].lo)
			return false;
	return true;
}

static bool same_rule(const struct unw_row *a, const struct unw_row *b)
{
	return a->type == b->type && a->cfa_off == b->cfa_off && a->fp_off == b->fp_off;
}

static int add_span(struct builder *b, __u64 lo, __u64 hi, const struct unw_row *rule)
{
	struct span *last = b->nr_spans ? &b->spans[b->nr_spans - 1] : NULL;

	/* the rows of one FDE come in order: extend the previous span when the rule repeats */
	if (last && last->hi == lo && same_rule(&last->rule, rule)) {
		last->hi = hi;
		return 0;
	}
	if (b->nr_spans + 1 >= b->cap_spans)
		return -E2BIG; /* more rows than instruction bytes: cannot happen */
	b->spans[b->nr_spans].lo = lo;
	b->spans[b->nr_spans].hi = hi;
	b->spans[b->nr_spans].rule = *rule;
	b->nr_spans++;
	return 0;
}

/* Walks one FDE's rows: each dwarf_cfi_addrframe gives the rules at pc and the range they hold.
 * An FDE that libdw may not run (not runnable) is covered as unsupported. */
static int add_fde(struct builder *b, Dwarf_CFI *cfi, __u64 lo, __u64 hi, bool runnable)
{
	__u64 pc = lo, olo, ohi, start, end;
	struct unw_row rule;
	int err;

	if (hi <= lo || !to_offsets(b, lo, hi, &olo, &ohi))
		return 0; /* empty, or describes code outside the executable segments */
	hi = lo + (ohi - olo);
	b->fdes++;
	while (pc < hi) {
		Dwarf_Frame *fr = NULL;
		Dwarf_Addr s, e;

		if (b->cancel && *b->cancel)
			return -ECANCELED;
		if (!runnable || dwarf_cfi_addrframe(cfi, pc, &fr)) {
			/* libdw could not execute this FDE: cover the rest as unsupported */
			set_unsupported(&rule);
			b->unsupported++;
			return add_span(b, olo + (pc - lo), ohi, &rule);
		}
		if (dwarf_frame_info(fr, &s, &e, NULL) < 0 || e <= pc || e > hi)
			e = hi;
		start = pc;
		end = e;
		if (!classify(fr, &rule))
			b->unsupported++;
		free(fr);
		err = add_span(b, olo + (start - lo), olo + (end - lo), &rule);
		if (err)
			return err;
		pc = end;
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

/* Adds every FDE of one CFI section.  Returns 0, or -EINVAL (why set) for a corrupt section, in
 * which case nothing from it should be trusted. */
static int add_section(struct builder *b, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		       Dwarf_CFI *cfi, bool eh, char *why, size_t size)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	int addr_size = ident && ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	Dwarf_Off off = 0, next;
	Elf_Data *data;
	int err;

	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
		snprintf(why, size, "cannot decompress %s", eh ? ".eh_frame" : ".debug_frame");
		return -EINVAL;
	}
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !ident) {
		snprintf(why, size, "cannot read %s", eh ? ".eh_frame" : ".debug_frame");
		return -EINVAL;
	}
	for (;;) {
		Dwarf_CFI_Entry entry, cie_entry;
		const __u8 *p, *end;
		__u64 lo = 0, len = 0;
		Dwarf_Off cie_next;
		__u8 enc;
		int r;

		r = dwarf_next_cfi(ident, data, eh, off, &next, &entry);
		if (r > 0)
			break;
		if (r < 0) {
			snprintf(why, size, "corrupt %s at offset %#llx: %s", eh ? ".eh_frame" : ".debug_frame",
				 (unsigned long long)off, dwarf_errmsg(-1));
			return -EINVAL;
		}
		off = next;
		if (dwarf_cfi_cie_p(&entry))
			continue;
		if (b->cancel && *b->cancel)
			return -ECANCELED;
		if (dwarf_next_cfi(ident, data, eh, entry.fde.CIE_pointer, &cie_next, &cie_entry) ||
		    !dwarf_cfi_cie_p(&cie_entry) ||
		    fde_encoding(&cie_entry.cie, addr_size, &enc)) {
			snprintf(why, size, "corrupt %s: an FDE's CIE at offset %#llx is unreadable",
				 eh ? ".eh_frame" : ".debug_frame",
				 (unsigned long long)entry.fde.CIE_pointer);
			return -EINVAL;
		}
		if (!eh)
			enc = DW_EH_PE_absptr;
		p = entry.fde.start;
		end = entry.fde.end;
		if (read_encoded(&p, end, enc, sh->sh_addr + (p - (const __u8 *)data->d_buf),
				 addr_size, &lo) ||
		    read_encoded(&p, end, enc & 0x0f, 0, addr_size, &len)) {
			snprintf(why, size, "corrupt %s: unreadable FDE address at offset %#llx",
				 eh ? ".eh_frame" : ".debug_frame", (unsigned long long)off);
			return -EINVAL;
		}
		/* .debug_frame FDEs of functions the linker dropped keep address 0 */
		if (!eh && lo == 0)
			continue;
		err = add_fde(b, cfi, lo, lo + len,
			      fde_bounded(b, &entry, &cie_entry, p, enc, addr_size));
		if (err)
			return err;
	}
	return 0;
}

static void sift_down(struct span *s, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		struct span tmp;

		if (child + 1 < n && s[child + 1].lo > s[child].lo)
			child++;
		if (s[root].lo >= s[child].lo)
			return;
		tmp = s[root];
		s[root] = s[child];
		s[child] = tmp;
	}
}

/* Sorts spans by start address without extra memory. */
static void heapsort_spans(struct span *s, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(s, i, n);
	while (n-- > 1) {
		struct span tmp = s[0];

		s[0] = s[n];
		s[n] = tmp;
		sift_down(s, 0, n);
	}
}

/* Appends a row (room guaranteed by the caller), merging it with an identical predecessor. */
static void push_row(struct cfi_rows *out, __u64 pc, const struct unw_row *rule)
{
	if (out->nr && same_rule(&out->rows[out->nr - 1], rule))
		return;
	if (out->nr && out->rows[out->nr - 1].pc == pc) {
		/* an empty row (a zero-length range) replaced by the next one */
		out->rows[out->nr - 1] = *rule;
		out->rows[out->nr - 1].pc = pc;
		if (out->nr > 1 && same_rule(&out->rows[out->nr - 2], rule))
			out->nr--;
		return;
	}
	out->rows[out->nr] = *rule;
	out->rows[out->nr].pc = pc;
	out->nr++;
}

/* Sorted spans -> rows: gaps become UNW_CFA_NONE rows, identical neighbours merge, and where
 * FDEs overlap the first one wins.  The rows are written over the spans (a span yields at most
 * two 8-byte rows into its own 16 bytes, read before they are written), which keeps the peak
 * memory of the largest tables (libLLVM: ~900k rows) to one buffer. */
static int spans_to_rows(struct builder *b, struct cfi_rows *out)
{
	const struct unw_row none = { .type = UNW_ROW_TYPE(UNW_CFA_NONE, UNW_FP_UNDEFINED) };
	size_t page = sysconf(_SC_PAGESIZE), used;
	__u64 prev_end = 0;

	/* in place: glibc's qsort copies the array, megabytes for the largest libraries */
	if (!spans_sorted(b))
		heapsort_spans(b->spans, b->nr_spans);
	out->rows = (struct unw_row *)b->spans;
	out->nr = 0;
	for (size_t i = 0; i < b->nr_spans; i++) {
		struct span s = b->spans[i];
		__u64 lo = s.lo;

		if (i && lo < prev_end) {
			if (s.hi <= prev_end)
				continue;
			lo = prev_end;
		}
		/* alignment padding between functions is never executed, nor a return address
		 * (those are looked up at the call, pc - 1): no row for it */
		if (i && lo >= prev_end + 16)
			push_row(out, prev_end, &none);
		push_row(out, lo, &s.rule);
		prev_end = s.hi;
	}
	if (b->nr_spans)
		push_row(out, prev_end, &none); /* room: the reserved spare span */
	/* the mapping now belongs to out; the pages past the rows go back */
	out->map_len = b->map_len;
	used = (out->nr * sizeof(struct unw_row) + page - 1) / page * page;
	if (used < b->map_len)
		madvise((char *)b->spans + used, b->map_len - used, MADV_DONTNEED);
	b->spans = NULL;
	b->nr_spans = b->cap_spans = b->map_len = 0;
	return 0;
}

/* Reserves room for max_spans spans (and a spare); pages are only used as they are touched. */
static int builder_reserve(struct builder *b, size_t max_spans)
{
	size_t page = sysconf(_SC_PAGESIZE);
	void *p;

	b->map_len = ((max_spans + 2) * sizeof(struct span) + page - 1) / page * page;
	p = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		b->map_len = 0;
		return -ENOMEM;
	}
	b->spans = p;
	b->nr_spans = 0;
	b->cap_spans = max_spans + 2;
	return 0;
}

static void builder_free(struct builder *b)
{
	if (b->spans)
		munmap(b->spans, b->map_len);
	b->spans = NULL;
	b->nr_spans = b->cap_spans = b->map_len = 0;
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
	/* a row takes at least one byte of CFI instructions: the section size bounds the spans
	 * (a compressed .debug_frame inflates: allow for it) */
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
	err = spans_to_rows(&b, out);
	if (!err && out->nr > UNWIND_MAX_TABLE_ROWS) {
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
