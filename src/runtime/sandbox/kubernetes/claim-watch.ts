/**
 * One watch over a namespace's SandboxClaims (of reins runs) for every rollout waiting on a claim:
 * list, then watch from the list's resourceVersion, re-established in a loop — client-node 2.x
 * aborts each watch after 30 s without data, and the API server ends watches too — and listed again
 * when the resourceVersion is too old (410). It runs while someone waits, and a little longer, so
 * a steady stream of rollouts keeps one watch open instead of one per claim.
 */
import { Watch } from "@kubernetes/client-node";
import { sleep } from "../host/process-tree.js";
import type { KubeClients } from "./client.js";
import { claimState, type ClaimObject, type ClaimState } from "./claim-status.js";
import { AGENT_SANDBOX } from "./manifests.js";

const LINGER_MS = 10_000;

type Waiter = (claim: ClaimObject) => void;

export class ClaimWatch {
  private readonly claims = new Map<string, ClaimObject>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private loop: Promise<void> | null = null;
  private current: AbortController | null = null;
  private lingering: NodeJS.Timeout | null = null;
  private closed = false;
  /** Watches started (the first after each list included), for tests and the bench. */
  watches = 0;

  constructor(
    private readonly clients: KubeClients,
    private readonly namespace: string,
    private readonly labelSelector: string,
  ) {}

  /** The claim's state once it is ready or ended, or "pending" when `deadline` (ms since epoch) came first. */
  wait(name: string, deadline: number): Promise<ClaimState> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const set = this.waiters.get(name) ?? new Set<Waiter>();
      this.waiters.set(name, set);
      const finish = (state: ClaimState) => {
        clearTimeout(timer);
        set.delete(waiter);
        if (set.size === 0) this.waiters.delete(name);
        this.idleCheck();
        resolve(state);
      };
      const waiter: Waiter = (claim) => {
        const state = claimState(claim);
        if (state.phase !== "pending") finish(state);
      };
      set.add(waiter);
      timer = setTimeout(() => finish({ phase: "pending" }), Math.max(0, deadline - Date.now()));
      this.ensureRunning();
      const known = this.claims.get(name);
      if (known) waiter(known);
    });
  }

  /** The last state seen of a claim (undefined when not seen). */
  seen(name: string): ClaimObject | undefined {
    return this.claims.get(name);
  }

  close(): void {
    this.closed = true;
    if (this.lingering) clearTimeout(this.lingering);
    this.current?.abort();
  }

  private ensureRunning(): void {
    if (this.lingering) {
      clearTimeout(this.lingering);
      this.lingering = null;
    }
    if (!this.loop && !this.closed) {
      this.loop = this.run().finally(() => {
        this.loop = null;
        if (this.waiters.size > 0 && !this.closed) this.ensureRunning();
      });
    }
  }

  private idleCheck(): void {
    if (this.waiters.size > 0 || this.lingering || !this.loop) return;
    this.lingering = setTimeout(() => {
      this.lingering = null;
      if (this.waiters.size === 0) this.current?.abort();
    }, LINGER_MS);
    this.lingering.unref();
  }

  private get active(): boolean {
    return !this.closed && (this.waiters.size > 0 || this.lingering !== null);
  }

  private notify(name: string, claim: ClaimObject): void {
    for (const waiter of [...(this.waiters.get(name) ?? [])]) waiter(claim);
  }

  private async run(): Promise<void> {
    while (this.active) {
      try {
        const list = (await this.clients.custom.listNamespacedCustomObject({
          ...AGENT_SANDBOX,
          namespace: this.namespace,
          plural: "sandboxclaims",
          labelSelector: this.labelSelector,
        })) as {
          metadata?: { resourceVersion?: string };
          items?: ClaimObject[];
        };
        this.claims.clear();
        for (const c of list.items ?? []) if (c.metadata?.name) this.claims.set(c.metadata.name, c);
        for (const [name, claim] of this.claims) this.notify(name, claim);
        let rv = list.metadata?.resourceVersion ?? "";
        // Watch from rv until it is too old; each watch ends within 30 s of quiet (client-node).
        while (this.active) {
          const began = Date.now();
          const end = await this.watchOnce(rv, (next) => (rv = next));
          if (end === "gone") break;
          // A watch refused at once (the server busy) is not retried in a tight loop.
          if (Date.now() - began < 1000 && this.active) await sleep(250);
        }
      } catch {
        if (this.active) await sleep(500);
      }
    }
  }

  private watchOnce(rv: string, advance: (rv: string) => void): Promise<"gone" | "again"> {
    return new Promise((resolve) => {
      let gone = false;
      const path = `/apis/${AGENT_SANDBOX.group}/${AGENT_SANDBOX.version}/namespaces/${this.namespace}/sandboxclaims`;
      this.watches++;
      new Watch(this.clients.config)
        .watch(
          path,
          { labelSelector: this.labelSelector, resourceVersion: rv, allowWatchBookmarks: true },
          (type: string, object: ClaimObject & { code?: number; metadata?: { resourceVersion?: string } }) => {
            if (type === "ERROR") {
              gone = true;
              return;
            }
            const next = object.metadata?.resourceVersion;
            if (next) advance(next);
            const name = object.metadata?.name;
            if (type === "BOOKMARK" || !name) return;
            if (type === "DELETED") {
              this.claims.delete(name);
              this.notify(name, { ...object, metadata: { ...object.metadata, deletionTimestamp: object.metadata?.deletionTimestamp ?? "deleted" } });
            } else {
              this.claims.set(name, object);
              this.notify(name, object);
            }
          },
          () => resolve(gone ? "gone" : "again"),
        )
        .then((controller) => {
          this.current = controller;
          if (!this.active) controller.abort();
        })
        .catch(() => resolve("again"));
    });
  }
}
