/**
 * The built-in tokenizer both sides share. A token is a run of ASCII letters or one digit,
 * optionally led by one space, or any other single code point. The server's vocabulary is
 * chosen so that tokenizing generated text gives back exactly the generated tokens, which
 * lets a client count tokens per event without a model tokenizer.
 */
const TOKEN_PATTERN = / ?[A-Za-z]+| ?\d|\s|[^\sA-Za-z\d]/gu;

export function countTokens(text: string): number {
  let count = 0;
  TOKEN_PATTERN.lastIndex = 0;
  while (TOKEN_PATTERN.exec(text) !== null) count++;
  return count;
}

export function splitTokens(text: string): string[] {
  return text.match(TOKEN_PATTERN) ?? [];
}
