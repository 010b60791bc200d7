//! Spin-wait loops found by their instructions, in any code: a sample whose
//! instruction pointer lies in a short loop that holds a spin-wait hint is
//! a thread waiting for another, not working, even where no rule of
//! [`super::waiting::WaitingRules`] names the code (a program's own barrier,
//! a statically linked runtime, a spin lock inlined by the compiler).
//!
//! ```text
//!   sampled ip, outside the named waiting code
//!       │  the code bytes around it: [ip - REACH, ip + REACH) of its mapping
//!       ▼
//!   every spin-wait hint in those bytes    x86-64: PAUSE (F3 90)
//!       │                                  AArch64: YIELD, WFE, ISB
//!       │  decode forward from the hint, at most MAX_AHEAD instructions,
//!       │  up to the first backward branch (conditional or not)
//!       ▼
//!   a spin loop = [branch target, end of branch), at most MAX_LOOP bytes,
//!   holding the hint; the sample is waiting if ip is inside it
//! ```
//!
//! Compilers emit these hints only for spin waits (`std::hint::spin_loop`,
//! `_mm_pause`, `cpu_relax`, the OpenMP runtimes' and TBB's back-off loops),
//! so a loop around one is a wait. Decoding from the hint, not from ip,
//! keeps the x86 decoder in step: the hint is an instruction boundary, and
//! two bytes F3 90 inside another instruction rarely decode into a short
//! loop around ip. x86-64 is decoded with `iced-x86`; AArch64's
//! instructions are one 32-bit word each and only four branch encodings
//! matter, so they are read here rather than through a decoder crate.
//! Pure: the caller reads the bytes (tests hand-assemble them).

use iced_x86::{Decoder, DecoderOptions, Mnemonic};

/// Bytes read on each side of a sampled address.
pub const REACH: u64 = 64;

/// The longest loop counted as a spin wait, in bytes (the loops of
/// `std::hint::spin_loop`, libgomp and TBB are 10 to 40 bytes).
const MAX_LOOP: u64 = 64;

/// Instructions decoded after a hint before giving up on a backward branch.
const MAX_AHEAD: usize = 12;

/// The instruction sets whose spin loops are recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    X86_64,
    Aarch64,
}

impl Isa {
    /// The instruction set of this build, `None` where spin loops are not
    /// recognised (samples there count by the named waiting code alone).
    pub fn native() -> Option<Isa> {
        if cfg!(target_arch = "x86_64") {
            Some(Isa::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Isa::Aarch64)
        } else {
            None
        }
    }

    /// The name users know it by.
    pub fn name(self) -> &'static str {
        match self {
            Isa::X86_64 => "x86-64",
            Isa::Aarch64 => "AArch64",
        }
    }
}

/// The spin loop `[start, end)` that `ip` lies in, given `code`, the bytes
/// at addresses `[base, base + code.len())` (at best [`REACH`] on each side
/// of `ip`); `None` when `ip` is in no spin loop.
pub fn spin_loop_around(isa: Isa, code: &[u8], base: u64, ip: u64) -> Option<(u64, u64)> {
    if ip < base || ip - base >= code.len() as u64 {
        return None;
    }
    match isa {
        Isa::X86_64 => x86_spin_loop(code, base, ip),
        Isa::Aarch64 => arm_spin_loop(code, base, ip),
    }
}

/// A direct branch met while reading forward from a spin-wait hint:
/// `[target, end)` is the loop it would close.
struct Branch {
    target: u64,
    end: u64,
    conditional: bool,
}

/// The loop of at most [`MAX_LOOP`] bytes around `ip` that the branches
/// after the hint at `hint`, in order, close: the first backward branch
/// decides; an unconditional forward jump ends the loop body first.
fn loop_closed_around(hint: u64, ip: u64, branches: impl Iterator<Item = Branch>) -> Option<(u64, u64)> {
    for branch in branches {
        if branch.target <= hint {
            let closes = branch.end - branch.target <= MAX_LOOP && (branch.target..branch.end).contains(&ip);
            return closes.then_some((branch.target, branch.end));
        }
        if !branch.conditional {
            return None;
        }
    }
    None
}

fn x86_spin_loop(code: &[u8], base: u64, ip: u64) -> Option<(u64, u64)> {
    let hints = code.windows(2).enumerate().filter(|(_, pair)| **pair == [0xF3, 0x90]);
    hints.map(|(at, _)| at).find_map(|at| {
        let hint = base + at as u64;
        let mut decoder = Decoder::with_ip(64, &code[at..], hint, DecoderOptions::NONE);
        let instructions = std::iter::from_fn(|| decoder.can_decode().then(|| decoder.decode()))
            .take(MAX_AHEAD)
            .take_while(|i| !i.is_invalid() && !matches!(i.mnemonic(), Mnemonic::Ret | Mnemonic::Call));
        let branches = instructions.filter_map(|i| {
            let conditional = i.is_jcc_short_or_near();
            (conditional || i.is_jmp_short_or_near()).then(|| Branch {
                target: i.near_branch_target(),
                end: i.next_ip(),
                conditional,
            })
        });
        loop_closed_around(hint, ip, branches)
    })
}

/// AArch64 hint words: YIELD, WFE, ISB SY.
const ARM_HINTS: [u32; 3] = [0xD503_203F, 0xD503_205F, 0xD503_3FDF];

fn arm_spin_loop(code: &[u8], base: u64, ip: u64) -> Option<(u64, u64)> {
    // Instructions are 4-byte aligned: skip to the first aligned word.
    let skip = ((4 - base % 4) % 4) as usize;
    let words: Vec<(u64, u32)> = code
        .get(skip..)
        .unwrap_or_default()
        .chunks_exact(4)
        .enumerate()
        .map(|(i, w)| {
            (
                base + skip as u64 + 4 * i as u64,
                u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
            )
        })
        .collect();
    words.iter().enumerate().find_map(|(i, &(hint, word))| {
        let branches = words.iter().skip(i + 1).take(MAX_AHEAD).filter_map(|&(at, word)| {
            arm_branch(word).map(|(offset, conditional)| Branch {
                target: at.wrapping_add_signed(offset),
                end: at + 4,
                conditional,
            })
        });
        ARM_HINTS
            .contains(&word)
            .then(|| loop_closed_around(hint, ip, branches))
            .flatten()
    })
}

/// The byte offset of a direct branch and whether it is conditional: B,
/// B.cond, CBZ/CBNZ, TBZ/TBNZ; `None` for any other word.
fn arm_branch(word: u32) -> Option<(i64, bool)> {
    let signed = |value: u32, bits: u32| (((value << (32 - bits)) as i32) >> (32 - bits)) as i64 * 4;
    if word & 0xFC00_0000 == 0x1400_0000 {
        Some((signed(word & 0x03FF_FFFF, 26), false))
    } else if word & 0xFF00_0010 == 0x5400_0000 || word & 0x7E00_0000 == 0x3400_0000 {
        Some((signed((word >> 5) & 0x7_FFFF, 19), true))
    } else if word & 0x7E00_0000 == 0x3600_0000 {
        Some((signed((word >> 5) & 0x3FFF, 14), true))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0x40_1000;

    fn in_spin_loop(isa: Isa, code: &[u8], base: u64, ip: u64) -> bool {
        spin_loop_around(isa, code, base, ip).is_some()
    }

    /// `std::hint::spin_loop` as rustc emits it in a wait on a flag:
    ///   0: mov eax, [rdi]      8B 07
    ///   2: test eax, eax       85 C0
    ///   4: jne 0x0c            75 06
    ///   6: pause               F3 90
    ///   8: jmp 0x00            EB F6
    ///   a: nop; nop            90 90
    ///   c: ret                 C3
    const X86_SPIN: [u8; 13] = [
        0x8B, 0x07, 0x85, 0xC0, 0x75, 0x06, 0xF3, 0x90, 0xEB, 0xF6, 0x90, 0x90, 0xC3,
    ];

    #[test]
    fn a_pause_loop_is_a_spin_loop_wherever_the_sample_falls_in_it() {
        for offset in 0..10 {
            assert!(
                in_spin_loop(Isa::X86_64, &X86_SPIN, BASE, BASE + offset),
                "offset {offset} is inside the loop"
            );
        }
        assert_eq!(
            spin_loop_around(Isa::X86_64, &X86_SPIN, BASE, BASE + 3),
            Some((BASE, BASE + 10)),
            "the loop runs from the load to the end of the jump back"
        );
        assert!(
            !in_spin_loop(Isa::X86_64, &X86_SPIN, BASE, BASE + 12),
            "ret is after it"
        );
        assert!(
            !in_spin_loop(Isa::X86_64, &X86_SPIN, BASE, BASE + 100),
            "outside the bytes"
        );
    }

    #[test]
    fn a_loop_without_a_hint_or_a_hint_without_a_loop_is_work() {
        // The same loop with the pause replaced by two nops: a compute loop.
        let mut compute = X86_SPIN;
        compute[6] = 0x90;
        assert!(!in_spin_loop(Isa::X86_64, &compute, BASE, BASE + 2));
        // pause; ret: no loop.
        let straight = [0x8B, 0x07, 0xF3, 0x90, 0xC3];
        assert!(!in_spin_loop(Isa::X86_64, &straight, BASE, BASE + 2));
        // A pause loop far longer than a spin wait (a jmp back over 200 bytes).
        let mut long = vec![0x90u8; 200];
        long.extend_from_slice(&[0xF3, 0x90, 0xE9]);
        long.extend_from_slice(&(-(202i32 + 5)).to_le_bytes());
        assert!(!in_spin_loop(Isa::X86_64, &long, BASE, BASE + 199));
    }

    #[test]
    fn the_second_of_two_spin_loops_is_found_too() {
        // Two pause loops one after the other (as rustc laid out the
        // spin-then-block barrier of `pinlearn work aco`); the sample is in
        // the second.
        let mut code = X86_SPIN[..10].to_vec();
        code.extend_from_slice(&X86_SPIN);
        assert!(in_spin_loop(Isa::X86_64, &code, BASE, BASE + 12));
        assert!(in_spin_loop(Isa::X86_64, &code, BASE, BASE + 3));
        assert!(!in_spin_loop(Isa::X86_64, &code, BASE, BASE + 22), "the ret");
    }

    #[test]
    fn a_pause_after_its_loop_head_with_a_conditional_branch_back() {
        //   0: pause               F3 90
        //   2: cmp dword [rdi], 0  83 3F 00
        //   5: je 0x00             74 F9
        //   7: ret                 C3
        let code = [0xF3, 0x90, 0x83, 0x3F, 0x00, 0x74, 0xF9, 0xC3];
        assert!(in_spin_loop(Isa::X86_64, &code, BASE, BASE + 5));
        assert!(!in_spin_loop(Isa::X86_64, &code, BASE, BASE + 7));
    }

    #[test]
    fn an_arm_yield_loop_is_a_spin_loop() {
        //   0: ldr w8, [x0]        b9400008
        //   4: cbnz w8, 0x10       35000068
        //   8: yield               d503203f
        //   c: b 0x00              17fffffd
        //  10: ret                 d65f03c0
        let words: [u32; 5] = [0xB940_0008, 0x3500_0068, 0xD503_203F, 0x17FF_FFFD, 0xD65F_03C0];
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert!(in_spin_loop(Isa::Aarch64, &code, BASE, BASE));
        assert!(in_spin_loop(Isa::Aarch64, &code, BASE, BASE + 12));
        assert!(!in_spin_loop(Isa::Aarch64, &code, BASE, BASE + 16));
        // Without the yield (a nop, d503201f), a plain loop.
        let mut plain = code.clone();
        plain[8..12].copy_from_slice(&0xD503_201Fu32.to_le_bytes());
        assert!(!in_spin_loop(Isa::Aarch64, &plain, BASE, BASE + 4));
    }

    #[test]
    fn arm_branch_offsets_are_signed_words() {
        assert_eq!(arm_branch(0x17FF_FFFD), Some((-12, false)));
        assert_eq!(arm_branch(0x3500_0068), Some((12, true)));
        // b.ne -8: 0x54 imm19=-2 cond=1
        assert_eq!(arm_branch(0x54FF_FFC1), Some((-8, true)));
        // tbnz w0, #0, -4
        assert_eq!(arm_branch(0x3707_FFE0), Some((-4, true)));
        assert_eq!(arm_branch(0xD65F_03C0), None);
    }
}
