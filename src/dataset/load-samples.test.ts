import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contentId, fingerprintSample } from "../core/fingerprint.js";
import type { DatasetRow } from "../eval/types.js";
import { loadSamples } from "./load-samples.js";

const humaneval = fileURLToPath(
  new URL("../../examples/humaneval/humaneval.jsonl", import.meta.url),
);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "stet-samples-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, text: string): Promise<string> {
  await writeFile(join(dir, name), text);
  return join(dir, name);
}

const chat = {
  input: [{ role: "user", content: "2+2" }],
  target: "4",
  metadata: { level: "easy" },
};
const rows = [
  { id: "a", input: "1+1", target: "2" },
  { id: 7, ...chat },
  { input: "3+3", target: "6" },
];

describe("loadSamples", () => {
  it("reads JSONL, JSON and CSV files relative to baseDir into the same samples", async () => {
    const jsonl = rows.map((row) => JSON.stringify(row)).join("\n");
    await write("rows.jsonl", jsonl);
    await write("rows.json", JSON.stringify(rows));
    const fromJsonl = await loadSamples("rows.jsonl", { baseDir: dir });
    expect(fromJsonl.map((r) => r.sample)).toEqual([
      { id: "a", input: "1+1", target: "2" },
      { id: "7", ...chat },
      { id: contentId({ input: "3+3", target: "6" }), input: "3+3", target: "6" },
    ]);
    expect(fromJsonl[1]?.fingerprint).toBe(fingerprintSample(chat));
    expect(await loadSamples("rows.json", { baseDir: dir })).toEqual(fromJsonl);
  });

  it("gathers CSV metadata.* columns into metadata", async () => {
    await write("rows.csv", 'id,input,target,metadata.level\na,"1+1, quickly",2,easy\n');
    const [record] = await loadSamples("rows.csv", { baseDir: dir });
    expect(record?.sample).toEqual({
      id: "a",
      input: "1+1, quickly",
      target: "2",
      metadata: { level: "easy" },
    });
  });

  it("gives every sample its fields in one order, id, input, target, metadata (the snapshot's JSON)", async () => {
    const rows = [
      { metadata: { k: 1 }, target: "t", input: "i", id: "a" },
      { target: "t", input: "i", id: "b" },
      { metadata: { k: 1 }, input: "i", id: "c" },
      { input: "i" },
    ];
    const records = await loadSamples(rows, { baseDir: dir });
    expect(records.map((r) => JSON.stringify(r.sample))).toEqual([
      '{"id":"a","input":"i","target":"t","metadata":{"k":1}}',
      '{"id":"b","input":"i","target":"t"}',
      '{"id":"c","input":"i","metadata":{"k":1}}',
      `{"id":"${records[3]!.sample.id}","input":"i"}`,
    ]);
  });

  it("derives missing ids from content, not position", async () => {
    const unnamed = Array.from({ length: 20 }, (_, i) => ({ input: `q${i}`, target: `${i}` }));
    const shuffled = [...unnamed].reverse();
    const idsOf = async (source: DatasetRow[]) =>
      new Map(
        (await loadSamples(source, { baseDir: dir })).map((r) => [r.sample.input, r.sample.id]),
      );
    expect(await idsOf(shuffled)).toEqual(await idsOf(unnamed));
  });

  it("keeps dataset order", async () => {
    const ordered = ["z", "a", "m"].map((id) => ({ id, input: id }));
    const records = await loadSamples(ordered, { baseDir: dir });
    expect(records.map((r) => r.sample.id)).toEqual(["z", "a", "m"]);
  });

  it("rejects duplicate ids naming both rows", async () => {
    const file = await write(
      "dup.jsonl",
      '{"id":1,"input":"a"}\n{"id":2,"input":"b"}\n{"id":"1","input":"c"}\n',
    );
    const loading = loadSamples(file, { baseDir: dir });
    await expect(loading).rejects.toMatchObject({
      code: "E_DUPLICATE_ID",
      message: `duplicate sample id "1": ${file}:1 and ${file}:3`,
    });
  });

  it("names a duplicate's first row by its line or index in every format, blank lines and quoted line breaks counted", async () => {
    const jsonl = await write(
      "dup2.jsonl",
      '\n{"id":"a","input":"x"}\n\n{"id":"b","input":"y"}\n{"id":"b","input":"z"}\n',
    );
    const csv = await write("dup.csv", 'id,input\na,"two\nlines"\nb,y\n\nb,z\n');
    const json = await write(
      "dup.json",
      '[{"id":"a","input":"x"},\n {"id":"b","input":"y"},\n {"id":"b","input":"z"}]',
    );
    const mapped = [{ q: "a" }, { q: "b" }, { q: "b" }];
    await expect(loadSamples(jsonl, { baseDir: dir })).rejects.toMatchObject({
      message: `duplicate sample id "b": ${jsonl}:4 and ${jsonl}:5`,
    });
    await expect(loadSamples(csv, { baseDir: dir })).rejects.toMatchObject({
      message: `duplicate sample id "b": ${csv}:4 and ${csv}:6`,
    });
    await expect(loadSamples(json, { baseDir: dir })).rejects.toMatchObject({
      message: `duplicate sample id "b": ${json}[1] and ${json}[2]`,
    });
    const mapper = (row: { q: string }) => ({ id: row.q, input: row.q });
    await expect(loadSamples(mapped, { baseDir: dir, mapper })).rejects.toMatchObject({
      message: `duplicate sample id "b": dataset[1] and dataset[2]`,
    });
  });

  it("reports a JSONL file's first bad row, a bad line after it on the same page or not", async () => {
    // The rows are read a page (up to 512 rows) at a time: a later line that does not parse
    // must not be reported before an earlier row that parses but is not a sample.
    const good = (i: number) => `{"id":"s${i}","input":"q"}`;
    const lines = Array.from({ length: 600 }, (_, i) => good(i));
    lines[99] = '{"input":"q","answer":"a"}';
    lines[100] = "{not json";
    const early = await write("bad-early.jsonl", `${lines.join("\n")}\n`);
    await expect(loadSamples(early, { baseDir: dir })).rejects.toThrow(
      `${early}:100: unknown field "answer"`,
    );
    lines[99] = good(99);
    lines[100] = good(100);
    lines[519] = '{"id":"s519"}';
    lines[520] = '{"input":"q","input":"r"}';
    const late = await write("bad-late.jsonl", `${lines.join("\n")}\n`);
    await expect(loadSamples(late, { baseDir: dir })).rejects.toThrow(
      `${late}:520: input: required`,
    );
    // A `limit` stops before the bad lines: they are never reported.
    expect(await loadSamples(late, { baseDir: dir, limit: 519 })).toHaveLength(519);
  });

  it("names a duplicate id's rows across pages of a JSONL file", async () => {
    const lines = Array.from({ length: 1_500 }, (_, i) => `{"id":"s${i}","input":"q"}`);
    lines[1_399] = '{"id":"s2","input":"again"}';
    const file = await write("dup-far.jsonl", `${lines.join("\n")}\n`);
    await expect(loadSamples(file, { baseDir: dir })).rejects.toMatchObject({
      code: "E_DUPLICATE_ID",
      message: `duplicate sample id "s2": ${file}:3 and ${file}:1400`,
    });
  });

  it("builds the same samples whether the quick check or zod passes a row", async () => {
    class Row {
      input = "from a class";
    }
    const bare = Object.assign(Object.create(null) as object, { id: 1.5, input: "bare" });
    const loaded = await loadSamples(
      [
        { id: -0, input: "x", target: null },
        { id: "b", input: { z: [1, "2"], a: null }, target: undefined, metadata: { k: undefined } },
        bare as DatasetRow,
        new Row() as unknown as DatasetRow,
        { id: "c", input: "y", "metadata.level": "easy", metadata: { tag: 1 } },
      ],
      { baseDir: dir },
    );
    expect(loaded.map((r) => r.sample)).toEqual([
      { id: "0", input: "x", target: null },
      { id: "b", input: { z: [1, "2"], a: null }, metadata: { k: undefined } },
      { id: "1.5", input: "bare" },
      { id: contentId({ input: "from a class" }), input: "from a class" },
      { id: "c", input: "y", metadata: { tag: 1, level: "easy" } },
    ]);
    expect(Object.keys(loaded[1]!.sample)).toEqual(["id", "input", "metadata"]);
    for (const { sample, fingerprint } of loaded) {
      expect(fingerprint).toBe(fingerprintSample(sample));
    }
  });

  it("treats two id-less rows with the same content as duplicates", async () => {
    const same = [{ input: "x" }, { input: "y" }, { input: "x" }];
    await expect(loadSamples(same, { baseDir: dir })).rejects.toMatchObject({
      code: "E_DUPLICATE_ID",
      message: expect.stringMatching(/dataset\[0\] and dataset\[2\] \(neither row has an id/),
    });
  });

  it("applies the sample(row) mapper", async () => {
    const source = [{ question: "2+2", answer: 4, topic: "sums" }];
    const records = await loadSamples(source, {
      baseDir: dir,
      mapper: (row) => ({
        id: `q-${row.question}`,
        input: row.question,
        target: String(row.answer),
      }),
    });
    expect(records[0]?.sample).toEqual({ id: "q-2+2", input: "2+2", target: "4" });
  });

  it("names the row when the mapper throws", async () => {
    const file = await write("mapped.jsonl", '{"q":"a"}\n{"nothing":1}\n');
    const mapper = (row: DatasetRow) => {
      if (row.q === undefined) throw new Error("no q column");
      return { input: row.q };
    };
    await expect(loadSamples(file, { baseDir: dir, mapper })).rejects.toMatchObject({
      code: "E_DATASET",
      message: `${file}:2: sample(row) threw: no q column`,
    });
  });

  it.each([
    ["undefined", undefined],
    ["a Promise", Promise.resolve({ input: "x" })],
  ])("rejects a mapper that returns %s", async (got, value) => {
    const loading = loadSamples([{ q: "x" }], { baseDir: dir, mapper: () => value as never });
    await expect(loading).rejects.toThrow(
      `dataset[0]: sample(row) returned ${got}; it must return`,
    );
  });

  it.each([
    ["a missing input", { target: "x" }, "dataset[0]: input: required"],
    ["an unknown column", { input: "x", answer: "y" }, 'dataset[0]: unknown field "answer"'],
    ["an empty id", { id: "", input: "x" }, "dataset[0]: id: "],
    [
      "a non-object metadata",
      { input: "x", metadata: [1] },
      "dataset[0]: metadata: expected an object",
    ],
    [
      "a NaN deep in the input",
      { input: { a: [1, NaN] } },
      "dataset[0]: input.a.1: NaN is not JSON",
    ],
    ["a Date", { input: "x", metadata: { at: new Date(0) } }, "metadata.at: a Date is not JSON"],
    ["a row that is not an object", "just text", "dataset[0]: sample: "],
    [
      "an input nested far too deep",
      { input: Array.from({ length: 100_000 }).reduce((inner: unknown) => [inner], 1) },
      "dataset[0]: input: nesting too deep: more than 512 levels of arrays and objects",
    ],
    [
      "a circular metadata",
      (() => {
        const metadata: Record<string, unknown> = {};
        metadata.self = metadata;
        return { input: "x", metadata };
      })(),
      "dataset[0]: metadata.self: a circular reference to an enclosing value is not JSON",
    ],
    ["a BigInt", { input: 3n }, "dataset[0]: input: a BigInt (3n) is not JSON"],
  ])("rejects %s, naming the row and field", async (_, row, message) => {
    const loading = loadSamples([row as DatasetRow], { baseDir: dir });
    await expect(loading).rejects.toMatchObject({ code: "E_DATASET" });
    await expect(loading).rejects.toThrow(message);
  });

  it("reads sync and async iterables", async () => {
    function* sync() {
      yield { input: "a" };
      yield { input: "b" };
    }
    async function* asynchronous() {
      yield { input: "a" };
      await new Promise((resolve) => setTimeout(resolve, 1));
      yield { input: "b" };
    }
    const fromSync = await loadSamples(sync(), { baseDir: dir });
    const fromAsync = await loadSamples(asynchronous(), { baseDir: dir });
    expect(fromAsync).toEqual(fromSync);
    expect(fromAsync.map((r) => r.sample.input)).toEqual(["a", "b"]);
  });

  it("stops reading after `limit` samples", async () => {
    async function* endless() {
      for (let i = 0; ; i += 1) yield { id: i, input: `q${i}` };
    }
    const records = await loadSamples(endless(), { baseDir: dir, limit: 3 });
    expect(records.map((r) => r.sample.id)).toEqual(["0", "1", "2"]);
  });

  it("rejects a source that is neither a path nor iterable", async () => {
    await expect(loadSamples(42 as never, { baseDir: dir })).rejects.toMatchObject({
      code: "E_DATASET",
    });
  });

  it.each([
    ["an empty file", "empty.jsonl", ""],
    ["blank lines only", "blank.jsonl", "\n  \n\r\n"],
    ["a CSV with only a header", "header.csv", "id,input,target\n"],
    ["an empty JSON array", "empty.json", " [ ]\n"],
  ])("rejects %s: no samples in <file>", async (_, name, text) => {
    const file = await write(name, text);
    const loading = loadSamples(name, { baseDir: dir });
    await expect(loading).rejects.toMatchObject({
      code: "E_DATASET",
      message: `no samples in ${file}`,
    });
    await expect(loadSamples(name, { baseDir: dir, allowEmpty: true })).resolves.toEqual([]);
  });

  it("rejects an empty inline dataset, naming the eval", async () => {
    await expect(loadSamples([], { baseDir: dir, evalName: "qa" })).rejects.toMatchObject({
      code: "E_DATASET",
      message: 'no samples in the dataset of eval "qa"',
    });
    async function* nothing() {}
    await expect(loadSamples(nothing(), { baseDir: dir })).rejects.toThrow(
      "no samples in the dataset",
    );
  });

  it("names the eval, the row and the message when an async iterable throws", async () => {
    async function* flaky() {
      yield { input: "a" };
      yield { input: "b" };
      throw new Error("connection reset");
    }
    const loading = loadSamples(flaky(), { baseDir: dir, evalName: "qa" });
    await expect(loading).rejects.toMatchObject({
      code: "E_DATASET",
      message: 'the dataset of eval "qa" threw reading row 3 (dataset[2]): connection reset',
    });
    const throwsAtOnce: Iterable<DatasetRow> = {
      [Symbol.iterator]: () => ({
        next: () => {
          throw "not an Error";
        },
      }),
    };
    await expect(loadSamples(throwsAtOnce, { baseDir: dir })).rejects.toThrow(
      "the dataset threw reading row 1 (dataset[0]): not an Error",
    );
  });

  it("keeps a bad row's own message when the iterable is fine", async () => {
    async function* rows() {
      yield { input: "a" };
      yield { nope: 1 } as DatasetRow;
    }
    await expect(loadSamples(rows(), { baseDir: dir, evalName: "qa" })).rejects.toThrow(
      /^dataset\[1\]: /,
    );
  });

  it("loads HumanEval through a mapper", async () => {
    const records = await loadSamples(humaneval, {
      baseDir: dir,
      mapper: (row) => ({ id: String(row.task_id), input: row.prompt ?? null }),
    });
    expect(records).toHaveLength(164);
    expect(records[0]?.sample.id).toBe("HumanEval/0");
    expect(records[163]?.sample.id).toBe("HumanEval/163");
  });
});
