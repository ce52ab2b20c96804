/**
 * State prepared in advance for the next local sandbox: a leased uid with its passwd and group
 * files, the state directory with its owner stamp, the control groups with their limits. Making
 * them costs a dozen syscalls (a memory group's mkdir is the dearest), so each creation takes the
 * spare made for its limits, and the next spare is made right after, once its keeper has been
 * launched (setImmediate), while other processes set the keeper up.
 *
 * A spare is an ordinary sandbox state that no process has ever used: owner-stamped like any
 * other, so a crashed runner's spares are pruned with its sandboxes; the provider's close()
 * removes them, and so does this process's exit (synchronously, as far as it still can).
 * Nothing in a spare depends on the sandbox that takes it: its uid, groups and files are fresh,
 * made for no one in particular and used by one sandbox only.
 */

/** At most this many different limits keep a spare at once. */
const MAX_KEYS = 2;

const atExit = new Set<() => void>();
let exitHooked = false;

function removeOnExit(remove: () => void): () => void {
  if (!exitHooked) {
    exitHooked = true;
    process.once("exit", () => {
      for (const r of atExit) r();
    });
  }
  atExit.add(remove);
  return () => atExit.delete(remove);
}

interface Spare<T> {
  value: T;
  forget: () => void;
}

export class SparePool<T> {
  private readonly spares = new Map<string, Spare<T>>();
  private readonly pending = new Map<string, NodeJS.Immediate>();

  /** `removeNow` removes a spare synchronously (at process exit). */
  constructor(private readonly removeNow: (value: T) => void) {}

  /** The spare made for `key`, now the caller's; undefined when there is none. */
  take(key: string): T | undefined {
    const spare = this.spares.get(key);
    if (!spare) return undefined;
    this.spares.delete(key);
    spare.forget();
    return spare.value;
  }

  /**
   * Makes a spare for `key` once the current turn of the event loop is over, unless one is there
   * or on its way. A spare that cannot be made is no failure: the next creation makes its state
   * itself (and reports why, if it fails too).
   */
  refill(key: string, make: () => T): void {
    if (this.spares.has(key) || this.pending.has(key)) return;
    const timer = setImmediate(() => {
      this.pending.delete(key);
      let value: T;
      try {
        value = make();
      } catch {
        return;
      }
      if (this.spares.size >= MAX_KEYS) {
        const [oldKey, old] = this.spares.entries().next().value as [string, Spare<T>];
        this.spares.delete(oldKey);
        old.forget();
        this.removeNow(old.value);
      }
      const spare: Spare<T> = { value, forget: () => undefined };
      spare.forget = removeOnExit(() => this.removeNow(value));
      this.spares.set(key, spare);
    });
    timer.unref();
    this.pending.set(key, timer);
  }

  /** Cancels the spares on their way and removes those made. */
  async drain(remove: (value: T) => Promise<void>): Promise<void> {
    for (const timer of this.pending.values()) clearImmediate(timer);
    this.pending.clear();
    const spares = [...this.spares.values()];
    this.spares.clear();
    for (const spare of spares) spare.forget();
    await Promise.all(spares.map((spare) => remove(spare.value).catch(() => undefined)));
  }
}
