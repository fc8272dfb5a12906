/** The output directory: bad targets are one CliError (never a hang), stale report files go, others stay. */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from '../../../contracts/cli-error.ts';
import { prepareOutputDir } from '../../../client/report/run-output.ts';

const temp = (): string => mkdtempSync(join(tmpdir(), 'benchtruth-output-'));

describe('prepareOutputDir', () => {
  it('an existing file, a path under a file and an uncreatable procfs path are CliErrors naming the flag', () => {
    const dir = temp();
    const file = join(dir, 'afile');
    writeFileSync(file, 'x');
    expect(() => prepareOutputDir(file)).toThrow(CliError);
    expect(() => prepareOutputDir(file)).toThrow(/^--output .*afile: exists and is not a directory$/);
    expect(() => prepareOutputDir(join(file, 'sub', 'deeper'), 'merge --output')).toThrow(/^merge --output .*: .*afile is a file, not a directory$/);
    if (existsSync('/proc/self')) expect(() => prepareOutputDir('/proc/benchtruth-nope/x')).toThrow(CliError);
  });

  it('creates missing levels', () => {
    const dir = join(temp(), 'a', 'b');
    prepareOutputDir(dir);
    expect(existsSync(dir)).toBe(true);
  });

  it('a reused directory loses the earlier run report files, and nothing else', () => {
    const dir = temp();
    const ours = ['requests.jsonl', 'raw_samples.json', 'per_request_lifecycle_metrics.json', 'summary_lifecycle_metrics.json', 'summary_server_metrics.json', 'stage_0_lifecycle_metrics.json', 'stage_12_server_metrics.json', 'benchmark-vllm-5.0qps-20260101-000000-benchtruth-fake-model.json'];
    const theirs = ['notes.txt', 'stage_x_lifecycle_metrics.json', 'requests.jsonl.bak', 'config.yaml'];
    for (const name of [...ours, ...theirs]) writeFileSync(join(dir, name), '{}');
    mkdirSync(join(dir, 'sub'));
    prepareOutputDir(dir);
    expect(readdirSync(dir).sort()).toEqual([...theirs, 'sub'].sort());
  });
});
