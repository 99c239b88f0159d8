import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../src/cli/main.js";

const PAGE = readFileSync(fileURLToPath(new URL("../docs/cli.md", import.meta.url)), "utf8");

/** The `## ` section of docs/cli.md whose heading names `stet <command>`. */
function section(command: string): string | undefined {
  return PAGE.split(/\n(?=## )/).find((part) => new RegExp(`^## .*\`stet ${command}\``).test(part));
}

const commands = buildProgram().commands.filter((command) => command.name() !== "help");

describe("docs/cli.md", () => {
  it("has a section for every command of the CLI", () => {
    expect(commands.length).toBeGreaterThan(10);
    const missing = commands.map((c) => c.name()).filter((name) => section(name) === undefined);
    expect(missing).toEqual([]);
  });

  it.each(commands.map((command) => [command.name(), command] as const))(
    "stet %s: its section names every flag the command takes",
    (name, command) => {
      const text = section(name) ?? "";
      const flags = command.options.flatMap((option) =>
        [option.long, option.short].filter((flag): flag is string => flag !== undefined),
      );
      expect(flags.filter((flag) => !new RegExp(`${flag}(?![\\w-])`).test(text))).toEqual([]);
    },
  );
});
