import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocatedRow } from "./dataset-file.js";
import { LineSplitter } from "./read-jsonl.js";
import { readRows } from "./read-rows.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "stet-rows-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, text: string | Uint8Array): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

async function collect(file: string): Promise<LocatedRow[]> {
  const rows: LocatedRow[] = [];
  for await (const row of readRows(file)) rows.push(row);
  return rows;
}

describe("readRows: JSONL", () => {
  it("yields one object per line, skipping blank lines, with file:line", async () => {
    const file = await write(
      "a.jsonl",
      '\uFEFF{"input":"a"}\n\n  \n{"input":"b"}\r\n{"input":"c"}',
    );
    expect(await collect(file)).toEqual([
      { row: { input: "a" }, where: `${file}:1` },
      { row: { input: "b" }, where: `${file}:4` },
      { row: { input: "c" }, where: `${file}:5` },
    ]);
  });

  it("accepts .ndjson", async () => {
    const file = await write("a.ndjson", '{"input":1}\n');
    expect(await collect(file)).toEqual([{ row: { input: 1 }, where: `${file}:1` }]);
  });

  it("names file:line and the parse problem for a malformed line", async () => {
    const file = await write("bad.jsonl", '{"input":"a"}\n{"input":"b"}\n{"input": oops}\n');
    const error = collect(file);
    await expect(error).rejects.toMatchObject({ code: "E_DATASET" });
    await expect(error).rejects.toThrow(new RegExp(`^${file}:3: invalid JSON: .+`));
  });

  it.each([
    ["an array", "[1,2]"],
    ["a string", '"text"'],
    ["null", "null"],
  ])("rejects a line that is %s", async (kind, line) => {
    const file = await write("shape.jsonl", `{"input":"a"}\n${line}\n`);
    await expect(collect(file)).rejects.toThrow(
      `${file}:2: a row must be a JSON object, got ${kind}`,
    );
  });

  it("stops reading when the consumer stops", async () => {
    const file = await write("long.jsonl", '{"input":1}\n'.repeat(10_000));
    for await (const { where } of readRows(file)) {
      expect(where).toBe(`${file}:1`);
      break;
    }
  });
});

describe("readRows: JSON array", () => {
  it("yields each element with file[index]", async () => {
    const file = await write("a.json", '[{"input":"a"},\n {"input":{"x":[1]}}]');
    expect(await collect(file)).toEqual([
      { row: { input: "a" }, where: `${file}[0]` },
      { row: { input: { x: [1] } }, where: `${file}[1]` },
    ]);
  });

  it("names file:line:column of a syntax error", async () => {
    const file = await write("bad.json", '[{"input":"a"},\n {"input": }]');
    await expect(collect(file)).rejects.toThrow(new RegExp(`^${file}:2:\\d+: invalid JSON`));
  });

  it("rejects a file that is not an array, and elements that are not objects", async () => {
    const object = await write("object.json", '{"input":"a"}');
    await expect(collect(object)).rejects.toThrow(`${object}: expected a JSON array of rows`);
    const mixed = await write("mixed.json", '[{"input":"a"}, 3]');
    await expect(collect(mixed)).rejects.toThrow(`${mixed}[1]: a row must be a JSON object`);
  });
});

describe("readRows: CSV", () => {
  it.each([
    ["LF", "\n"],
    ["CRLF", "\r\n"],
  ])(
    "uses the header as column names, keeps quoted commas and newlines, names the start line (%s)",
    async (_, eol) => {
      const text = [
        "id,input,target",
        '1,"a, b",x',
        "",
        `2,"multi${eol}line ""quoted""",y`,
        "3,c,z",
      ];
      const file = await write(`eol-${_}.csv`, text.join(eol) + eol);
      expect(await collect(file)).toEqual([
        { row: { id: "1", input: "a, b", target: "x" }, where: `${file}:2` },
        { row: { id: "2", input: `multi${eol}line "quoted"`, target: "y" }, where: `${file}:4` },
        { row: { id: "3", input: "c", target: "z" }, where: `${file}:6` },
      ]);
    },
  );

  it("names the line of a record with the wrong number of columns", async () => {
    const file = await write("ragged.csv", 'input,target\r\n"a\r\nb",b\r\nc\r\n');
    const error = collect(file);
    await expect(error).rejects.toMatchObject({ code: "E_DATASET" });
    await expect(error).rejects.toThrow(`${file}:4: invalid CSV`);
  });

  it("rejects a header with a repeated column", async () => {
    const file = await write("dup.csv", "input,input\na,b\n");
    await expect(collect(file)).rejects.toThrow(`${file}:1: the CSV column "input" appears twice`);
  });
});

describe("readRows: depth and repeated keys", () => {
  const deep = (levels: number) => "[".repeat(levels) + "1" + "]".repeat(levels);

  it("accepts a row 512 levels deep and refuses one deeper, naming file:line:column", async () => {
    // The row object is level 1: its input may hold 511 nested arrays.
    const fine = await write("deep-ok.jsonl", `{"input":${deep(511)}}\n`);
    expect(await collect(fine)).toHaveLength(1);
    for (const levels of [512, 100_000]) {
      const file = await write("deep.jsonl", `{"input":"a"}\n\n{"input":${deep(levels)}}\n`);
      const reading = collect(file);
      await expect(reading).rejects.toMatchObject({ code: "E_DATASET" });
      await expect(reading).rejects.toThrow(
        `nesting too deep at ${file}:3:521: a row may nest arrays and objects 512 levels deep`,
      );
    }
  });

  it("refuses a JSON array whose row nests too deep", async () => {
    const fine = await write("deep-ok.json", `[{"input":"a"},\n{"input":${deep(511)}}]`);
    expect(await collect(fine)).toHaveLength(2);
    const file = await write("deep.json", `[{"input":"a"},\n{"input":${deep(5_000)}}]`);
    await expect(collect(file)).rejects.toThrow(`nesting too deep at ${file}:2:521: `);
  });

  it.each([
    ["never closed", `[{"input":"a"},\n{"input":${"[".repeat(5_000)}`],
    ["with a syntax error past the limit", `[{"input":"a"},\n{"input":${deep(5_000)}x]`],
  ])("refuses a JSON array too deep and %s as too deep, not a stack overflow", async (_, text) => {
    const file = await write("deep-bad.json", text);
    const reading = collect(file);
    await expect(reading).rejects.toMatchObject({ code: "E_DATASET" });
    await expect(reading).rejects.toThrow(
      `nesting too deep at ${file}:2:521: a row may nest arrays and objects 512 levels deep`,
    );
  });

  it("refuses a repeated key, naming file:line:column and the key", async () => {
    const file = await write(
      "dup.jsonl",
      '{"input":"a: b","target":"c"}\n{"input":"x","meta":{"k":1,"k":2}}\n',
    );
    const reading = collect(file);
    await expect(reading).rejects.toMatchObject({
      code: "E_DATASET",
      details: { key: "k", pointer: "/meta/k" },
    });
    await expect(reading).rejects.toThrow(
      `${file}:2:28: duplicate key "k" (JSON would keep only the last value; remove or rename one)`,
    );
    const array = await write(
      "dup.json",
      '[\n  {"input": "a"},\n  {"input": "b", "input": "c"}\n]',
    );
    await expect(collect(array)).rejects.toThrow(`${array}:3:18: duplicate key "input"`);
  });

  it("accepts the same key in different objects, and colons and quotes inside strings", async () => {
    const text = '{"input":{"k":"a:\\"b\\""},"target":{"k":"\\\\"}}\n';
    const file = await write("same.jsonl", text);
    expect(await collect(file)).toEqual([
      { row: { input: { k: 'a:"b"' }, target: { k: "\\" } }, where: `${file}:1` },
    ]);
  });
});

describe("readRows: UTF-8", () => {
  const latin1 = (text: string) => Buffer.from(text, "latin1");

  it.each([
    ["JSONL", "latin.jsonl", '{"input":"a"}\n\n{"input":"caf\u00e9"}\n', 3, 14],
    ["JSON", "latin.json", '[{"input":"a"},\n {"input":"na\u00efve"}]', 2, 14],
    ["CSV", "latin.csv", "id,input\n1,a\n2,caf\u00e9\n", 3, 6],
  ])(
    "names file:line:column of a byte that is not UTF-8 (%s)",
    async (_, name, text, line, col) => {
      const file = await write(name, latin1(text));
      const reading = collect(file);
      await expect(reading).rejects.toMatchObject({ code: "E_DATASET" });
      await expect(reading).rejects.toThrow(
        new RegExp(
          `^${file}:${line}:${col}: not UTF-8 \\(byte 0x(E9|EF)\\); save the dataset as UTF-8$`,
        ),
      );
    },
  );

  it("finds the bad byte past the first chunk, and accepts multi-byte characters across chunks", async () => {
    const good = '{"input":"\u00e9\u4e2d\ud83d\ude00"}\n'.repeat(60_000);
    const file = await write(
      "chunks.jsonl",
      Buffer.concat([Buffer.from(good), latin1('{"input":"\u00e9"}\n')]),
    );
    const reading = collect(file);
    await expect(reading).rejects.toThrow(`${file}:60001:11: not UTF-8 (byte 0xE9)`);
    const fine = await write("fine.jsonl", good);
    expect(await collect(fine)).toHaveLength(60_000);
  });

  it.each([
    ["an overlong encoding", [0xc0, 0xaf], "byte 0xC0"],
    ["a UTF-16 surrogate", [0xed, 0xa0, 0x80], "byte 0xED"],
    ["a lone continuation byte", [0x80], "byte 0x80"],
  ])("refuses %s", async (_, bytes, byte) => {
    const file = await write(
      "odd.jsonl",
      Buffer.from([...Buffer.from('{"input":"'), ...bytes, 0x22, 0x7d]),
    );
    await expect(collect(file)).rejects.toThrow(`${file}:1:11: not UTF-8 (${byte})`);
  });

  it("refuses a character cut off at the end of the file", async () => {
    const file = await write(
      "cut.jsonl",
      Buffer.from([...Buffer.from('{"input":"a"}\n'), 0xe4, 0xb8]),
    );
    await expect(collect(file)).rejects.toThrow(`${file}:2:1: not UTF-8 (a truncated character`);
  });

  it("finds the bad byte after a U+FFFD that the file really holds", async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"input":"\ufffd"}\n{"input":"b"}\n'),
      latin1('{"input":"\u00e9"}\n'),
    ]);
    const file = await write("fffd-then-latin.jsonl", bytes);
    await expect(collect(file)).rejects.toThrow(`${file}:3:11: not UTF-8 (byte 0xE9)`);
  });

  it("keeps a U+FFFD that the file really holds", async () => {
    const file = await write("fffd.jsonl", '{"input":"\ufffd"}\n');
    expect(await collect(file)).toEqual([{ row: { input: "\ufffd" }, where: `${file}:1` }]);
  });
});

describe("readRows: files", () => {
  it.each(["dir.jsonl", "dir.json", "dir.csv"])("rejects a directory (%s)", async (name) => {
    await mkdir(join(dir, name));
    await expect(collect(join(dir, name))).rejects.toMatchObject({
      code: "E_DATASET",
      message: `dataset path is not a file: ${join(dir, name)}`,
    });
  });

  it("rejects an unknown extension and a missing file", async () => {
    expect(() => readRows(join(dir, "data.txt"))).toThrow(/unsupported dataset file .*data\.txt/);
    await expect(collect(join(dir, "missing.jsonl"))).rejects.toMatchObject({
      code: "E_DATASET",
      message: `dataset file not found: ${join(dir, "missing.jsonl")}`,
    });
  });
});

describe("readRows: JSONL lines, as node:readline splits them", () => {
  /** The lines readline (crlfDelay: Infinity, as the reader used) makes of `chunks`. */
  async function readlineLines(chunks: string[]): Promise<string[]> {
    const lines: string[] = [];
    const input = Readable.from(chunks, { objectMode: false });
    for await (const line of createInterface({ input, crlfDelay: Infinity })) lines.push(line);
    return lines;
  }

  function splitterLines(chunks: string[]): string[] {
    const splitter = new LineSplitter();
    const lines = chunks.flatMap((chunk) => splitter.split(chunk));
    const last = splitter.end();
    return last === undefined ? lines : [...lines, last];
  }

  it("ends lines where readline does, whatever the chunks: \\n, \\r\\n, a lone \\r, a \\r\\n split", async () => {
    const texts = [
      "a\nb\r\nc\rd\n\ne",
      "\r\n\r\n\n\r\r",
      "x\r",
      "\n",
      "last line without a break",
      '{"input":"a"}\r\n{"input":"b"}\r\n',
    ];
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (const text of texts) {
      // Every way of cutting it in two, and random cuts into many pieces.
      const cuts = Array.from({ length: text.length + 1 }, (_, at) => [at]);
      for (let i = 0; i < 20; i += 1) {
        cuts.push([...new Set(Array.from({ length: 4 }, () => Math.floor(next() * text.length)))]);
      }
      for (const at of cuts) {
        const points = [0, ...at.sort((a, b) => a - b), text.length];
        const chunks = points.slice(1).map((end, i) => text.slice(points[i], end));
        const pieces = chunks.filter((c) => c !== "");
        expect(splitterLines(pieces), JSON.stringify(pieces)).toEqual(await readlineLines(pieces));
      }
    }
  });

  it("numbers the lines of a file past its first chunk as readline did, a \\r\\n across the chunk boundary", async () => {
    // The reader reads 1 MiB at a time: put a `\r\n` across the first boundary, and a lone
    // `\r` and CRLF lines after it.
    const chunk = 1 << 20;
    const head = '{"input":"a"}\r\n';
    const padding = chunk - head.length - '{"input":""}'.length - 1;
    const first = `${head}{"input":"${"x".repeat(padding)}"}\r\n`;
    expect(first.length).toBe(chunk + 1);
    const file = await write(
      "boundary.jsonl",
      `${first}{"input":"b"}\r{"input":"c"}\r\n\r\n{"input":"d"}`,
    );
    const rows = await collect(file);
    expect(rows.map((r) => r.where)).toEqual([1, 2, 3, 4, 6].map((line) => `${file}:${line}`));
    expect(rows.map((r) => (r.row.input as string).slice(0, 1))).toEqual(["a", "x", "b", "c", "d"]);
  });
});
