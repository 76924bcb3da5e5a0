"""TypeScript source templates: a module header and the blocks a synthetic module is assembled from."""

from __future__ import annotations

TS_HEADER = """// @Domain@ @purpose@.
import { z } from "zod";
import type { Logger } from "../logger";

export const @CONST@_STATUSES = ["pending", "active", "failed", "done"] as const;
export type @Ent@Status = (typeof @CONST@_STATUSES)[number];

export const @Ent@Schema = z.object({
  id: z.string(),
  @ltext@: z.string().min(1),
  @lnum@: z.number().int().nonnegative(),
  @lgroup@: z.string().default("default"),
  status: z.enum(@CONST@_STATUSES),
  createdAt: z.string().datetime(),
});

export type @Ent@ = z.infer<typeof @Ent@Schema>;

export class @Ent@Error extends Error {
  constructor(message: string, readonly @lent@Id?: string) {
    super(message);
    this.name = "@Ent@Error";
  }
}
"""

TS_BLOCKS = [
    """
export async function @verb@WithRetry(
  client: { @verb@(id: string): Promise<@Ent@> },
  id: string,
  attempts = @n3@,
): Promise<@Ent@> {
  let delay = 250;
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      return await client.@verb@(id);
    } catch (err) {
      lastError = err;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay *= 2;
    }
  }
  throw new @Ent@Error(`giving up on ${id} after ${attempts} attempts: ${String(lastError)}`, id);
}
""",
    """
export function totalsBy@Group@(items: readonly @Ent@[]): Map<string, number> {
  const totals = new Map<string, number>();
  for (const item of items) {
    if (item.status === "failed") continue;
    totals.set(item.@lgroup@, (totals.get(item.@lgroup@) ?? 0) + item.@lnum@);
  }
  return new Map([...totals.entries()].sort(([a], [b]) => a.localeCompare(b)));
}
""",
    """
export function parse@Ent@(raw: unknown, log?: Logger): @Ent@ {
  const result = @Ent@Schema.safeParse(raw);
  if (!result.success) {
    log?.warn({ issues: result.error.issues }, "invalid @ent@ payload");
    throw new @Ent@Error(`invalid @ent@: ${result.error.issues.map((i) => i.path.join(".")).join(", ")}`);
  }
  return result.data;
}
""",
    """
export class @Ent@Cache {
  private readonly items = new Map<string, { storedAt: number; value: @Ent@ }>();

  constructor(private readonly ttlMs = @ttl@000) {}

  get(key: string): @Ent@ | undefined {
    const entry = this.items.get(key);
    if (!entry) return undefined;
    if (Date.now() - entry.storedAt > this.ttlMs) {
      this.items.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: @Ent@): void {
    this.items.set(key, { storedAt: Date.now(), value });
  }
}
""",
    """
export async function fetchAll@Ents@(baseUrl: string, pageSize = @n@): Promise<@Ent@[]> {
  const out: @Ent@[] = [];
  let cursor: string | undefined;
  do {
    const url = new URL(`${baseUrl}/@ents@`);
    url.searchParams.set("limit", String(pageSize));
    if (cursor) url.searchParams.set("cursor", cursor);
    const res = await fetch(url);
    if (!res.ok) throw new @Ent@Error(`GET ${url} -> ${res.status}`);
    const body = (await res.json()) as { data: unknown[]; next_cursor?: string };
    out.push(...body.data.map((d) => parse@Ent@(d)));
    cursor = body.next_cursor;
  } while (cursor);
  return out;
}
""",
    """
// @cjk_comment@
export function validate@Ent@(item: @Ent@): string[] {
  const problems: string[] = [];
  if (!item.@ltext@.trim()) problems.push("@ltext@ is required");
  if (item.@lnum@ < 0) problems.push(`@lnum@ must be >= 0, got ${item.@lnum@}`);
  if (!@CONST@_STATUSES.includes(item.status)) problems.push(`unknown status ${item.status}`);
  return problems;
}
""",
]
