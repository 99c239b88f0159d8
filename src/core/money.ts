/**
 * Dollars as people read them: cents from $1 up, four decimals below, and below a cent as many
 * decimals as three significant digits need, so a sub-cent cost (one gpt-4o-mini call: about
 * $0.00002) never shows as `$0.0000`. Exactly zero is `$0.00`.
 *
 * @example formatUsd(12.345) // "$12.35"; formatUsd(0.25) // "$0.2500"; formatUsd(0.0000234) // "$0.0000234"
 */
export function formatUsd(usd: number): string {
  const sign = usd < 0 ? "-" : "";
  const amount = Math.abs(usd);
  if (amount === 0) return "$0.00";
  if (amount >= 1) return `${sign}$${amount.toFixed(2)}`;
  if (amount < 1e-12) return `${sign}$${amount.toExponential(2)}`;
  // Decimals for three significant digits, at least four; below a trillionth of a dollar,
  // scientific notation.
  const leadingZeros = Math.max(0, -Math.floor(Math.log10(amount)) - 1);
  const decimals = Math.min(12, Math.max(4, leadingZeros + 3));
  let text = amount.toFixed(decimals);
  if (decimals > 4) text = text.replace(/0+$/, "");
  return `${sign}$${text}`;
}
