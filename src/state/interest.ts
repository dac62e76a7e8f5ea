import { isNum, isObject, isOptionalFn } from '../core/config.js';
import { checkConfig } from '../core/errors.js';
import type { Fields, SchemaTypes } from './schema.js';
import type { Entity, Player, StateServer } from './server.js';

/** A point on the plane the grid indexes (game units). */
export interface Point {
  x: number;
  y: number;
}

/** Options of a `GridInterest`. */
export interface GridInterestOptions<T extends SchemaTypes, I extends Fields> {
  /** A client sees the entities within this distance of its viewpoint (game units). */
  radius: number;
  /** Side of a grid cell (game units). Default `radius`: a query then reads 3 × 3 cells. */
  cellSize?: number;
  /** An entity seen stays seen until it is this much further than `radius` (fraction), so one walking along the edge is not destroyed and created again each tick. Default 0.1. */
  hysteresis?: number;
  /** Where an entity is. Default its `values.x` and `values.y`; undefined: seen by nobody (except its owner). */
  position?: (entity: Entity<T>) => Point | undefined;
  /** Where a client looks from. Default its own entity's position; undefined: it sees only its own entity. */
  viewpoint?: (player: Player<T, I>) => Point | undefined;
}

/**
 * Interest by distance, for the common case: `server.interest(new GridInterest(server, { radius: 300 }).relevant)`.
 * Once per tick it bins every entity into square cells; each client's query reads only the cells
 * within its radius, so the cost grows with the entities near each client, not with the world.
 */
export class GridInterest<T extends SchemaTypes = SchemaTypes, I extends Fields = Fields> {
  private readonly server: StateServer<T, I>;
  private readonly radius: number;
  private readonly cell: number;
  private readonly keep: number;
  private readonly position: (entity: Entity<T>) => Point | undefined;
  private readonly viewpoint: (player: Player<T, I>) => Point | undefined;
  private builtTick = -1;
  private readonly cells = new Map<number, Entity<T>[]>();
  private readonly seen = new Map<Player<T, I>, { tick: number; set: Set<Entity<T>> }>();

  constructor(server: StateServer<T, I>, options: GridInterestOptions<T, I>) {
    checkConfig(isObject(options) && isNum(options.radius) && options.radius > 0, 'GridInterest: radius must be > 0');
    this.server = server;
    this.radius = options.radius;
    this.cell = options.cellSize ?? options.radius;
    checkConfig(isNum(this.cell) && this.cell > 0, 'GridInterest: cellSize must be > 0');
    const h = options.hysteresis ?? 0.1;
    checkConfig(isNum(h, 0, 10), 'GridInterest: hysteresis must be 0..10');
    this.keep = this.radius * (1 + h);
    checkConfig(isOptionalFn(options.position) && isOptionalFn(options.viewpoint), 'GridInterest: position and viewpoint must be functions');
    this.position = options.position ?? ((e) => xy(e.values));
    this.viewpoint = options.viewpoint ?? ((p) => (p.entity === undefined ? undefined : this.position(p.entity)));
  }

  /** The relevance callback to pass to `StateServer.interest`. */
  readonly relevant = (player: Player<T, I>, entity: Entity<T>): boolean => {
    const tick = this.server.tickNo;
    if (this.builtTick !== tick) this.build(tick);
    let s = this.seen.get(player);
    if (s === undefined) {
      s = { tick: -1, set: new Set() };
      this.seen.set(player, s);
    }
    if (s.tick !== tick) this.query(player, s, tick);
    return s.set.has(entity);
  };

  /** Forget a client (call on `leave`; a client not queried for a tick is dropped at the next build anyway). */
  forget(player: Player<T, I>): void {
    this.seen.delete(player);
  }

  private key(cx: number, cy: number): number {
    return (cx + 32768) * 65536 + (cy + 32768);
  }

  private build(tick: number): void {
    this.builtTick = tick;
    for (const list of this.cells.values()) list.length = 0;
    for (const e of this.server.entities()) {
      const p = this.position(e);
      if (p === undefined) continue;
      const k = this.key(Math.floor(p.x / this.cell), Math.floor(p.y / this.cell));
      let list = this.cells.get(k);
      if (list === undefined) {
        list = [];
        this.cells.set(k, list);
      }
      list.push(e);
    }
    for (const [p, s] of this.seen) if (s.tick < tick - 1) this.seen.delete(p);
  }

  private query(player: Player<T, I>, s: { tick: number; set: Set<Entity<T>> }, tick: number): void {
    const before = s.set;
    const now = new Set<Entity<T>>();
    s.tick = tick;
    s.set = now;
    const c = this.viewpoint(player);
    if (c === undefined) return;
    const r = this.keep;
    const x0 = Math.floor((c.x - r) / this.cell);
    const x1 = Math.floor((c.x + r) / this.cell);
    const y0 = Math.floor((c.y - r) / this.cell);
    const y1 = Math.floor((c.y + r) / this.cell);
    const r2 = this.radius * this.radius;
    const k2 = r * r;
    for (let cx = x0; cx <= x1; cx++) {
      for (let cy = y0; cy <= y1; cy++) {
        const list = this.cells.get(this.key(cx, cy));
        if (list === undefined) continue;
        for (const e of list) {
          const p = this.position(e)!;
          const d2 = (p.x - c.x) ** 2 + (p.y - c.y) ** 2;
          if (d2 <= r2 || (d2 <= k2 && before.has(e))) now.add(e);
        }
      }
    }
  }
}

function xy(v: unknown): Point | undefined {
  const o = v as { x?: unknown; y?: unknown };
  return typeof o.x === 'number' && typeof o.y === 'number' ? (o as Point) : undefined;
}
