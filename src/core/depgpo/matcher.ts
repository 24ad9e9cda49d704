/**
 * Finds which of many values occur as substrings of a text (Aho–Corasick). Stdout edges need
 * "does any value printed so far appear in this command's text" for every command; checking each
 * value with `includes` is O(commands × values), which is 10^8 on a 10,000-step trajectory.
 * The automaton makes it one pass per text, O(text length + matches).
 */
export class SubstringMatcher {
  /** Trie transitions keyed by node * 65536 + UTF-16 code unit. */
  private readonly next = new Map<number, number>();
  private readonly fail: number[] = [0];
  /** Value id that ends exactly at this node, or -1. */
  private readonly terminal: number[] = [-1];
  /** Nearest proper suffix node that is terminal (dictionary link), or -1. */
  private readonly output: number[] = [-1];
  private readonly stamp: number[];
  private round = 0;

  constructor(readonly values: readonly string[]) {
    const children: number[][] = [[]];
    values.forEach((value, id) => {
      let node = 0;
      for (let i = 0; i < value.length; i++) {
        const key = node * 65536 + value.charCodeAt(i);
        let child = this.next.get(key);
        if (child === undefined) {
          child = this.fail.length;
          this.next.set(key, child);
          this.fail.push(0);
          this.terminal.push(-1);
          this.output.push(-1);
          children.push([]);
          children[node].push(value.charCodeAt(i), child);
        }
        node = child;
      }
      if (value.length > 0 && this.terminal[node] === -1) this.terminal[node] = id;
    });
    // Breadth-first so a node's failure link is final before its children need it.
    const queue: number[] = [];
    for (let i = 1; i < children[0].length; i += 2) queue.push(children[0][i]);
    for (let head = 0; head < queue.length; head++) {
      const node = queue[head];
      const kids = children[node];
      for (let i = 0; i < kids.length; i += 2) {
        const code = kids[i];
        const child = kids[i + 1];
        let f = this.fail[node];
        let target = this.next.get(f * 65536 + code);
        while (target === undefined && f !== 0) {
          f = this.fail[f];
          target = this.next.get(f * 65536 + code);
        }
        this.fail[child] = target !== undefined && target !== child ? target : 0;
        const fl = this.fail[child];
        this.output[child] = this.terminal[fl] !== -1 ? fl : this.output[fl];
        queue.push(child);
      }
    }
    this.stamp = new Array<number>(values.length).fill(0);
  }

  /** Ids of the distinct values that occur in `text`, in order of first occurrence. */
  find(text: string): number[] {
    const found: number[] = [];
    if (this.values.length === 0) return found;
    const round = ++this.round;
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      let target = this.next.get(node * 65536 + code);
      while (target === undefined && node !== 0) {
        node = this.fail[node];
        target = this.next.get(node * 65536 + code);
      }
      node = target ?? 0;
      for (let hit = this.terminal[node] !== -1 ? node : this.output[node]; hit !== -1; hit = this.output[hit]) {
        const id = this.terminal[hit];
        if (this.stamp[id] !== round) {
          this.stamp[id] = round;
          found.push(id);
        }
      }
    }
    return found;
  }
}
