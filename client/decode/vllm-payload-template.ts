/**
 * A small cache of vLLM payload shapes (see json-shape-template.ts), so that most SSE chunks
 * are read without JSON.parse — the client's raw decode spent about 40 % of its time there.
 *
 * Exactness: a template is learnt from a payload JSON.parse has just accepted, by walking the
 * parsed object exactly as `interpretVllmPayload` (client/apis/vllm-payload.ts) does and noting
 * which holes feed the text, the finish reason and the usage. A payload that matches the
 * template parses to the same structure with the holes' values, so that walk would take the same
 * branches: the result is the same Payload, built from the hole values. Keep the two walks in
 * step when either changes (test/client/decode/vllm-payload-template.test.ts compares them).
 *
 * Thrash: a stream whose payloads keep changing shape would pay a template build per payload.
 * Builds spend a credit (at most MAX_BUILD_CREDIT, one back per HITS_PER_CREDIT hits); with no
 * credit left only every RETRY_EVERY-th miss builds one. A shape-changing stream then costs its
 * parses plus a few failed matches; a stream that alternates one new shape with one hit cannot
 * keep building either.
 */
import { SEVERAL_CHOICES, type Payload } from '../apis/api-adapter.ts';
import { buildJsonShapeTemplate, matchJsonShape, Refused, type HoleValues, type JsonShapeTemplate, type ShapeNode } from './json-shape-template.ts';
import { isJsonObject } from '../../contracts/json.ts';
import { chatTextPieces, type TextPath } from '../apis/chat-text.ts';

/**
 * How to rebuild a usage value from hole values: a fresh copy each time, as JSON.parse gives
 * (keys in source order, which is Object.keys order once integer-like keys are refused).
 */
type Recipe =
  | { readonly kind: 'string' | 'number'; readonly hole: number }
  | { readonly kind: 'constant'; readonly value: null | boolean }
  | { readonly kind: 'object'; readonly keys: readonly string[]; readonly fields: readonly Recipe[] }
  | { readonly kind: 'array'; readonly items: readonly Recipe[] };

interface VllmPayloadTemplate {
  readonly shape: JsonShapeTemplate;
  /**
   * The payload's text, in interpretVllmPayload's order: a string hole, or the holes of a chat
   * text piece with alternatives (the reasoning), of which the first non-empty one is the text.
   */
  readonly textHoles: ReadonlyArray<number | readonly number[]>;
  /** The holes of the string finish_reasons, in order: the last non-empty one is the reason (none: null). */
  readonly finishHoles: readonly number[];
  /** Some choice's delta has a non-empty tool_calls array: token-bearing whatever the text. */
  readonly toolCalls: boolean;
  /** Null when the payload's usage is not an object. */
  readonly usage: (Recipe & { kind: 'object' }) | null;
  /** The number hole of a lone choice's `index`, or -1: then `choice` is Payload.choice. */
  readonly choiceHole: number;
  readonly choice: number | null;
}

const CAPACITY = 8;
const MAX_BUILD_CREDIT = 16;
const HITS_PER_CREDIT = 8;
const RETRY_EVERY = 256;

/** Most recently matched first. */
const templates: VllmPayloadTemplate[] = [];
const holeValues: HoleValues = [];
let buildCredit = MAX_BUILD_CREDIT;
let skippedBuilds = 0;

/** Counters for tests (that the template path is really taken) and experiments. */
export const vllmPayloadTemplateStats = { hits: 0, misses: 0, builds: 0, refused: 0 };

/** Forgets every template and zeroes the counters (tests start from a known state). */
export function resetVllmPayloadTemplates(): void {
  templates.length = 0;
  buildCredit = MAX_BUILD_CREDIT;
  skippedBuilds = 0;
  Object.assign(vllmPayloadTemplateStats, { hits: 0, misses: 0, builds: 0, refused: 0 });
}

/** The payload `data` means, when it matches a known shape; else null (the caller parses). */
export function interpretByTemplate(data: string): Payload | null {
  for (let i = 0; i < templates.length; i++) {
    const template = templates[i] as VllmPayloadTemplate;
    if (!matchJsonShape(template.shape, data, holeValues)) continue;
    if (i > 0) {
      templates.splice(i, 1);
      templates.unshift(template);
    }
    if (buildCredit < MAX_BUILD_CREDIT) buildCredit += 1 / HITS_PER_CREDIT;
    vllmPayloadTemplateStats.hits++;
    return payloadFrom(template, holeValues);
  }
  vllmPayloadTemplateStats.misses++;
  return null;
}

/** Offers a payload that missed, with what JSON.parse made of it, as a new template. */
export function learnVllmPayloadTemplate(data: string, parsed: unknown): void {
  if (buildCredit < 1 && ++skippedBuilds % RETRY_EVERY !== 0) return;
  buildCredit = Math.max(0, buildCredit - 1);
  vllmPayloadTemplateStats.builds++;
  const template = buildVllmPayloadTemplate(data, parsed);
  if (template === null) {
    vllmPayloadTemplateStats.refused++;
    return;
  }
  templates.unshift(template);
  if (templates.length > CAPACITY) templates.pop();
}

function payloadFrom(template: VllmPayloadTemplate, values: HoleValues): Payload {
  const { textHoles, finishHoles } = template;
  let text = '';
  for (let i = 0; i < textHoles.length; i++) {
    const piece = textHoles[i] as number | readonly number[];
    text += typeof piece === 'number' ? (values[piece] as string) : firstNonEmpty(piece, values);
  }
  const usage = template.usage === null ? null : (rebuild(template.usage, values) as Payload['usage']);
  return {
    tokenBearing: template.toolCalls || text !== '',
    text,
    dialectTokens: null,
    usage,
    finishReason: lastNonEmpty(finishHoles, values),
    error: null,
    done: false,
    choice: template.choiceHole >= 0 ? choiceIndex(Number(values[template.choiceHole])) : template.choice,
  };
}

/** A lone choice's index as Payload.choice gives it: a non-negative integer, else 0 (one choice). */
export function choiceIndex(index: unknown): number {
  return typeof index === 'number' && Number.isSafeInteger(index) && index >= 0 ? index : 0;
}

/** A chat text piece's text, as chatText picks it: its first non-empty string, or ''. */
function firstNonEmpty(holes: readonly number[], values: HoleValues): string {
  for (let i = 0; i < holes.length; i++) {
    const value = values[holes[i] as number] as string;
    if (value !== '') return value;
  }
  return '';
}

/** The last of the finish reasons that is not "" (interpretVllmPayload's walk keeps that one), or null. */
function lastNonEmpty(holes: readonly number[], values: HoleValues): string | null {
  for (let i = holes.length - 1; i >= 0; i--) {
    const value = values[holes[i] as number] as string;
    if (value !== '') return value;
  }
  return null;
}

function rebuild(recipe: Recipe, values: HoleValues): unknown {
  switch (recipe.kind) {
    case 'string':
      return values[recipe.hole];
    case 'number':
      // Number() of a valid JSON number text is the value JSON.parse gives (same rounding, -0 kept).
      return Number(values[recipe.hole]);
    case 'constant':
      return recipe.value;
    case 'array':
      return recipe.items.map((item) => rebuild(item, values));
    case 'object': {
      const { keys, fields } = recipe;
      const fresh: Record<string, unknown> = {};
      for (let i = 0; i < keys.length; i++) {
        const field = fields[i] as Recipe;
        // Flat number fields are nearly all of usage: no call for them.
        fresh[keys[i] as string] = field.kind === 'number' ? Number(values[field.hole]) : rebuild(field, values);
      }
      return fresh;
    }
  }
}


function recipeOf(node: ShapeNode): Recipe {
  switch (node.kind) {
    case 'string':
    case 'number':
      return { kind: node.kind, hole: node.hole };
    case 'literal':
      return { kind: 'constant', value: node.value };
    case 'array':
      return { kind: 'array', items: node.items.map(recipeOf) };
    case 'object': {
      const keys = [...node.entries.keys()];
      if (keys.some(awkwardKey)) throw new Refused();
      return { kind: 'object', keys, fields: [...node.entries.values()].map(recipeOf) };
    }
  }
}

function child(node: ShapeNode | undefined, key: string): ShapeNode | undefined {
  return node?.kind === 'object' ? node.entries.get(key) : undefined;
}

function item(node: ShapeNode | undefined, index: number): ShapeNode | undefined {
  return node?.kind === 'array' ? node.items[index] : undefined;
}

function stringHole(node: ShapeNode | undefined): number {
  if (node?.kind !== 'string') throw new Refused();
  return node.hole;
}

/** Array indices sort first in Object.keys and `__proto__` would set a prototype: not worth exactness work. */
const awkwardKey = (key: string): boolean => /^\d+$/.test(key) || key === '__proto__';

/** The mirror of interpretVllmPayload's walk, on `parsed` and the template's nodes side by side. */
function buildVllmPayloadTemplate(data: string, parsed: unknown): VllmPayloadTemplate | null {
  // Errors, flat errors and payloads without a choices array are the parse's to decide. A
  // template never has a top-level `message`, so nothing matching it can be a flat error object
  // (`{"object": "error", "message": …}`) whatever its `object` string says.
  if (!isJsonObject(parsed) || (parsed.error !== undefined && parsed.error !== null) || parsed.message !== undefined || !Array.isArray(parsed.choices)) return null;
  const shape = buildJsonShapeTemplate(data);
  if (shape === null) return null;
  try {
    const textHoles: Array<number | number[]> = [];
    const finishHoles: number[] = [];
    let toolCalls = false;
    const choices: unknown[] = parsed.choices;
    const choicesNode = child(shape.root, 'choices');
    if (choicesNode?.kind !== 'array' || choicesNode.items.length !== choices.length) throw new Refused();
    choices.forEach((choice: unknown, index) => {
      if (!isJsonObject(choice)) return;
      const choiceNode = choicesNode.items[index];
      if (typeof choice.finish_reason === 'string') finishHoles.push(stringHole(child(choiceNode, 'finish_reason')));
      if (typeof choice.text === 'string') {
        textHoles.push(stringHole(child(choiceNode, 'text')));
      } else if (isJsonObject(choice.delta)) {
        const delta = choice.delta;
        const deltaNode = child(choiceNode, 'delta');
        const holeAt = (path: TextPath): number => stringHole(path.reduce<ShapeNode | undefined>((node, step) => (typeof step === 'number' ? item(node, step) : child(node, step)), deltaNode));
        for (const piece of chatTextPieces(delta)) textHoles.push(piece.length === 1 ? holeAt(piece[0] as TextPath) : piece.map(holeAt));
        if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) toolCalls = true;
      }
    });
    let usage: (Recipe & { kind: 'object' }) | null = null;
    if (isJsonObject(parsed.usage)) {
      const recipe = recipeOf(child(shape.root, 'usage') ?? { kind: 'literal', value: null });
      // The parse's own key order must be the recipe's (it is, with unique, non-integer keys).
      const parsedKeys = Object.keys(parsed.usage);
      if (recipe.kind !== 'object' || recipe.keys.length !== parsedKeys.length || recipe.keys.some((key, i) => key !== parsedKeys[i])) throw new Refused();
      usage = recipe;
    }
    // A lone choice's numeric index is read from its hole; anything else is the same for every match.
    const only = choices.length === 1 && isJsonObject(choices[0]) ? choices[0] : null;
    const indexNode = only !== null && typeof only.index === 'number' ? child(choicesNode.items[0], 'index') : undefined;
    if (indexNode !== undefined && indexNode.kind !== 'number') throw new Refused();
    const choiceHole = indexNode === undefined ? -1 : indexNode.hole;
    const choice = choices.length === 0 ? null : choices.length > 1 ? SEVERAL_CHOICES : choiceIndex(only?.index);
    return { shape, textHoles, finishHoles, toolCalls, usage, choiceHole, choice };
  } catch (error) {
    if (error instanceof Refused) return null;
    throw error;
  }
}
