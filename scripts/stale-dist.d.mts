/** Why `root`'s dist/ may not match its sources, or undefined when it is up to date. */
export function staleDist(root: string): string | undefined;
