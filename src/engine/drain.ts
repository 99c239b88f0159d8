/**
 * Dispatches the items `next` gives (keys, or stored attempts to score again) with at most
 * `concurrency` at a time, until it gives none or `stopped()` says no more. Each slot takes the
 * next item as soon as its previous one is done, so the pool stays full instead of advancing in
 * waves. An item taken once `stopped()` says no is dispatched with `go` false (to be given back).
 * A `next` or `dispatch` that throws ends the pool: it takes nothing more, and throws that error
 * once the items in flight are done.
 *
 * Slots are opened as items come, not `concurrency` of them up front: a slot opens the next one
 * once it has dispatched an item, so a pool of 1000 over 6 keys holds 7 slots at most, and what
 * the pool costs grows with the items there are, never with the concurrency asked for.
 *
 * @example await drain(() => queue.shift(), 8, () => false, async (key) => execute(key));
 */
export async function drain<T>(
  next: () => T | undefined | Promise<T | undefined>,
  concurrency: number,
  stopped: () => boolean,
  dispatch: (item: T, go: boolean) => Promise<void>,
  /** Items to take in all (the probe of a spend cap takes one). */
  limit = Infinity,
): Promise<void> {
  const most = Math.min(concurrency, limit);
  const slots: Promise<void>[] = [];
  let taken = 0;
  let failure: { error: unknown } | undefined;
  const open = () => {
    if (slots.length < most) {
      slots.push(
        slot().catch((error: unknown) => {
          failure ??= { error };
        }),
      );
    }
  };
  const slot = async () => {
    while (taken < limit && failure === undefined) {
      taken++;
      const item = await next();
      if (item === undefined) return;
      // Asked only with an item in hand, right before it is dispatched (the budget's answer is
      // about dispatching it, and counts the keys in flight at that moment).
      const go = !stopped();
      const dispatched = dispatch(item, go);
      // Opened once this item is in flight, so the next slot's dispatch check counts it.
      if (go) open();
      await dispatched;
      if (!go) return;
    }
  };
  open();
  // Slots open while others run: wait until every one opened has ended. A slot that failed
  // stops the others from taking more; its error is thrown once none is left running.
  for (let i = 0; i < slots.length; i++) await slots[i];
  if (failure) throw failure.error;
}
