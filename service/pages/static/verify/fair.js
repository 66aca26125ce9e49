// The fair shuffle of docs/engine.md 10.1-10.3 in the browser, with WebCrypto only (no
// network): the commitment is SHA-256 of the server seed's 32 bytes; the deck is an unbiased
// Fisher-Yates shuffle of the deck in display order fed by the byte stream
// HMAC-SHA256(key = server seed, "<client seeds joined by ':'>:<nonce>:<counter>").
// service/games/common/fair.py states the same algorithm byte by byte; the browser tests compare both.

export const ALGORITHM = "hmac-sha256-fisher-yates-v1";
export const RANKS = "A23456789TJQK";
export const SUITS = "CDHS";
/** The deck in display order (1.4): AC is position 0, KS position 51. */
export const DECK = Array.from(SUITS).flatMap((suit) => Array.from(RANKS, (rank) => rank + suit));

/** A card's place in display order, or -1 for anything that is not a card code. */
export function cardIndex(code) {
  if (typeof code !== "string" || code.length !== 2) return -1;
  const rank = RANKS.indexOf(code[0]);
  const suit = SUITS.indexOf(code[1]);
  return rank < 0 || suit < 0 ? -1 : suit * 13 + rank;
}

/** Cards in display order. */
export function inDisplayOrder(cards) {
  return [...cards].sort((a, b) => cardIndex(a) - cardIndex(b));
}

/** The bytes of a seed of 64 hex digits, or null when it is not one. */
export function seedBytes(hex) {
  if (typeof hex !== "string" || !/^[0-9a-fA-F]{64}$/.test(hex)) return null;
  return Uint8Array.from(hex.match(/../g), (pair) => parseInt(pair, 16));
}

function toHex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** SHA-256 of the seed's bytes, as hex (the hand's commitment). */
export async function commitment(serverSeed) {
  const bytes = seedBytes(serverSeed);
  if (bytes === null) throw new Error("the server seed is not 64 hex digits");
  return toHex(await crypto.subtle.digest("SHA-256", bytes));
}

/** The HMAC-SHA256 byte stream; `counter` is the next block to draw, as in ByteStream. */
export class ByteStream {
  constructor(key, clientSeeds, nonce, counter = 0) {
    this.key = key;
    this.prefix = `${clientSeeds.join(":")}:${nonce}:`;
    this.counter = counter;
    this.block = new Uint8Array(0);
    this.pos = 0;
  }

  static async open(serverSeed, clientSeeds, nonce, counter = 0) {
    const bytes = seedBytes(serverSeed);
    if (bytes === null) throw new Error("the server seed is not 64 hex digits");
    if (!Array.isArray(clientSeeds) || clientSeeds.length === 0) {
      throw new Error("there are no client seeds");
    }
    for (const seed of clientSeeds) {
      if (typeof seed !== "string" || seed.includes(":") || seed.length < 1 || seed.length > 256) {
        throw new Error(`client seed ${JSON.stringify(seed)} is malformed`);
      }
    }
    if (!Number.isSafeInteger(nonce) || nonce < 0) throw new Error("the nonce is malformed");
    const key = await crypto.subtle.importKey(
      "raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"],
    );
    return new ByteStream(key, clientSeeds, nonce, counter);
  }

  async next() {
    if (this.pos === this.block.length) {
      const message = new TextEncoder().encode(`${this.prefix}${this.counter}`);
      this.block = new Uint8Array(await crypto.subtle.sign("HMAC", this.key, message));
      this.counter += 1;
      this.pos = 0;
    }
    const byte = this.block[this.pos];
    this.pos += 1;
    return byte;
  }
}

/** Fisher-Yates of `cards` (in the order given) with rejection sampling on single bytes. */
export async function fisherYates(cards, stream) {
  const order = [...cards];
  for (let i = order.length - 1; i > 0; i -= 1) {
    const n = i + 1;
    const limit = 256 - (256 % n);
    let b = await stream.next();
    while (b >= limit) b = await stream.next();
    const j = b % n;
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/**
 * `cards` (the deck in display order by default) shuffled by the stream from block
 * `counter`; returns the order and the counter a later shuffle of the hand continues at.
 */
export async function shuffle(serverSeed, clientSeeds, nonce, cards = DECK, counter = 0) {
  const stream = await ByteStream.open(serverSeed, clientSeeds, nonce, counter);
  const order = await fisherYates(cards, stream);
  return { order, counter: stream.counter };
}
