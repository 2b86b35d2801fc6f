/** Swaps two names of the working directory with renameat2(RENAME_EXCHANGE) until `done` exists; prints how often. */
export const SWAPPER = `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
pairs = [(b'out', b'lnk'), (b'out2', b'lnk2')]
swaps, end = 0, time.time() + 90
while not os.path.exists('done') and time.time() < end:
    for a, b in pairs:
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
            swaps += 1
print('swaps', swaps)
`;
