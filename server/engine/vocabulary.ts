/**
 * The generator's vocabulary. Every entry is exactly one token of contracts/tokenizer.ts and
 * no two entries merge when concatenated (all letter tokens start with a space), so a
 * reader can recount any generated text exactly. Multi-byte entries exercise UTF-8 handling.
 */
const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but ' +
  'have an they you were her one all we there been if more when will would who so no she other ' +
  'its may these about than into them can only time some could new two first then do any like ' +
  'my now over such our man me even most made after also did many before must through back ' +
  'years where much your way well down should because each just those people how too little ' +
  'state good very make world still own see men work long get here between both life being under ' +
  'never day same another know while last might us great old year off come since against go came ' +
  'right used take three model token stream server latency byte truth bench'
).split(' ');

const PUNCTUATION = ['.', ',', ';', ':', '!', '?', '\n'];

/** Two-, three- and four-byte UTF-8 code points, each a token of its own. */
export const MULTIBYTE = ['é', 'ß', 'ñ', '—', '你', '好', '世', '界', '日', '本', '😀', '🚀', '🎉'];

export const ASCII_VOCABULARY: readonly string[] = Object.freeze([...WORDS.map((w) => ` ${w}`), ...PUNCTUATION]);

/** Token ids: ASCII entries first, then multi-byte ones, stable across versions. */
export const VOCABULARY: readonly string[] = Object.freeze([...ASCII_VOCABULARY, ...MULTIBYTE]);

export const FIRST_MULTIBYTE_ID = ASCII_VOCABULARY.length;

/** The id of the end-of-sequence token (it has no text). */
export const EOS_ID = VOCABULARY.length;
