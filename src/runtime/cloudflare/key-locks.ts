/**
 * KeyLocks runs work holding the locks of some keys: a piece of work waits for
 * every earlier one that holds any of its keys. All of a piece's keys are taken
 * at once, in the turn it arrives, so two pieces never wait for each other.
 */
export class KeyLocks {
  readonly #held = new Map<string, Promise<void>>();

  /** hold runs `work` once it holds the lock of each of `keys`; answers what `work` answers. */
  async hold<T>(keys: Iterable<string>, work: () => Promise<T>): Promise<T> {
    const unique = [...new Set(keys)];
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const before = unique.map((key) => this.#held.get(key));
    for (const key of unique) this.#held.set(key, mine);
    try {
      await Promise.all(before);
      return await work();
    } finally {
      release();
      for (const key of unique) if (this.#held.get(key) === mine) this.#held.delete(key);
    }
  }
}
