/**
 * The system calls a sandboxed program may not make, as a classic-BPF seccomp program for
 * bwrap's `--seccomp FD`. Each is a way to hold memory that no rlimit charges and no size cap
 * bounds: `memfd_create` and `memfd_secret` (files without a filesystem), `shmget` (System V
 * segments, which outlive a detach), and a user namespace of its own (`clone`/`unshare` with
 * CLONE_NEWUSER, `clone3`, whose flags a filter cannot read), in which it could mount a tmpfs.
 * Calls of another ABI (32-bit, x32) are refused whole, so none of these comes in by a side door.
 */

interface Abi {
  /** AUDIT_ARCH_* of the native ABI. */
  audit: number;
  /** Numbers at or above this are another ABI's (x32 on x86-64). */
  foreignFrom?: number;
  denied: Record<string, number>;
  clone: number;
  unshare: number;
}

const ABIS: Partial<Record<NodeJS.Architecture, Abi>> = {
  x64: {
    audit: 0xc000003e,
    foreignFrom: 0x40000000,
    denied: { shmget: 29, memfd_create: 319, clone3: 435, memfd_secret: 447 },
    clone: 56,
    unshare: 272,
  },
  arm64: {
    audit: 0xc00000b7,
    denied: { shmget: 194, memfd_create: 279, clone3: 435, memfd_secret: 447 },
    clone: 220,
    unshare: 97,
  },
};

const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const ALLOW = 0x7fff0000;
const ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const CLONE_NEWUSER = 0x10000000;
/** Offsets in struct seccomp_data: the call's number, its ABI, its first argument (low half). */
const NR = 0;
const ARCH = 4;
const ARG0 = 16;

type Op = [code: number, jt: number, jf: number, k: number];

/**
 * The filter for this machine's ABI (x86-64 or arm64), or undefined on another, where the
 * sandbox runs without one. Denied calls fail with ENOSYS (as on a kernel without them, which
 * programs handle), a new user namespace with EPERM.
 *
 * @example const program = seccompFilter(); // 8 bytes per instruction, for bwrap --seccomp
 */
export function seccompFilter(arch: NodeJS.Architecture = process.arch): Buffer | undefined {
  const abi = ABIS[arch];
  if (abi === undefined) return undefined;
  const ops: Op[] = [
    [LD_W_ABS, 0, 0, ARCH],
    [JEQ_K, 1, 0, abi.audit],
    [RET_K, 0, 0, ERRNO | ENOSYS],
    [LD_W_ABS, 0, 0, NR],
  ];
  if (abi.foreignFrom !== undefined) {
    ops.push([JGE_K, 0, 1, abi.foreignFrom], [RET_K, 0, 0, ERRNO | ENOSYS]);
  }
  for (const nr of Object.values(abi.denied)) {
    ops.push([JEQ_K, 0, 1, nr], [RET_K, 0, 0, ERRNO | ENOSYS]);
  }
  // clone and unshare: refused with CLONE_NEWUSER in their flags (the first argument), else
  // allowed. The accumulator holds the number until the last check, which loads the flags.
  ops.push(
    [JEQ_K, 1, 0, abi.clone],
    [JEQ_K, 0, 3, abi.unshare],
    [LD_W_ABS, 0, 0, ARG0],
    [JSET_K, 0, 1, CLONE_NEWUSER],
    [RET_K, 0, 0, ERRNO | EPERM],
    [RET_K, 0, 0, ALLOW],
  );
  // struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }, in the machine's (little) endianness.
  const program = Buffer.alloc(ops.length * 8);
  ops.forEach(([code, jt, jf, k], i) => {
    program.writeUInt16LE(code, i * 8);
    program.writeUInt8(jt, i * 8 + 2);
    program.writeUInt8(jf, i * 8 + 3);
    program.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return program;
}
