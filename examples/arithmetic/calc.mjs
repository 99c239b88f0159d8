// The program under test: reads an arithmetic expression on stdin, prints its value.
// It evaluates strictly left to right (no operator precedence): a realistic bug for the eval to find.
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const tokens = input.match(/\d+(?:\.\d+)?|[-+*/]/g) ?? [];
  let value = Number(tokens[0]);
  for (let i = 1; i < tokens.length; i += 2) {
    const n = Number(tokens[i + 1]);
    const op = tokens[i];
    value = op === "+" ? value + n : op === "-" ? value - n : op === "*" ? value * n : value / n;
  }
  process.stdout.write(`${value}\n`);
});
