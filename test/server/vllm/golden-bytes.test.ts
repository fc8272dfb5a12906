import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { VLLM_VERSIONS } from '../../../server/dialects/vllm/dialect-version.ts';
import { answerGoldenCases, GOLDEN_CASES, goldenPath, type GoldenAnswer } from '../../fixtures/golden/golden-cases.ts';

let answers: Map<string, GoldenAnswer>;

beforeAll(async () => {
  answers = await answerGoldenCases();
});

const table = VLLM_VERSIONS.flatMap((version) => GOLDEN_CASES.map((c) => [version, c.name] as const));

describe('golden bytes (regenerate: npx tsx test/fixtures/golden/regenerate.ts)', () => {
  it.each(table)('vLLM %s %s answers exactly the committed bytes', (version, name) => {
    const answer = answers.get(`${version}/${name}`);
    expect(answer?.status).toBe(200);
    const committed = readFileSync(goldenPath(version, name));
    // Compare as text first for a readable diff, then byte for byte.
    expect(answer?.body.toString('utf8')).toBe(committed.toString('utf8'));
    expect(Buffer.compare(answer?.body ?? Buffer.alloc(0), committed)).toBe(0);
  });
});
