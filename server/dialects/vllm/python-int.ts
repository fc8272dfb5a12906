/**
 * Python's `int(text)` for the strings vLLM converts (`logit_bias` keys): surrounding
 * whitespace, a sign, digits of any script (Unicode category Nd) and single underscores
 * between them. Pure.
 */
const PYTHON_INT_LITERAL = /^\s*[+-]?\p{Nd}+(?:_\p{Nd}+)*\s*$/u;
const DECIMAL_DIGIT = /^\p{Nd}$/u;

/** Whether Python's `int()` takes `text` in base 10. */
export function isPythonIntLiteral(text: string): boolean {
  return PYTHON_INT_LITERAL.test(text);
}

/**
 * A digit's value: Unicode lays every script's digits out as runs of ten, zero first, so the
 * value is the distance from the start of the run, modulo 10 (the mathematical digits are five
 * such runs back to back).
 */
function digitValue(char: string): number {
  let cp = char.codePointAt(0) as number;
  let distance = 0;
  while (distance < 60 && DECIMAL_DIGIT.test(String.fromCodePoint(cp - 1))) {
    cp--;
    distance++;
  }
  return distance % 10;
}

/** `int(text)` as Python computes it, or null when Python would raise ValueError. */
export function pythonInt(text: string): bigint | null {
  if (!isPythonIntLiteral(text)) return null;
  const trimmed = text.trim();
  const negative = trimmed.startsWith('-');
  let digits = '';
  for (const char of trimmed.replace(/^[+-]/, '')) {
    if (char === '_') continue;
    digits += char >= '0' && char <= '9' ? char : String(digitValue(char));
  }
  const value = BigInt(digits);
  return negative ? -value : value;
}
