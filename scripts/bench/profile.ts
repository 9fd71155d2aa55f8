// A CPU profile of this process over chosen stretches only (e.g. the service's segments of a benchmark,
// not the floor's that alternate with them), through the inspector's sampling profiler. The stretches
// are stitched into one .cpuprofile that Chrome DevTools or scripts/bench/profile-summary.ts reads.
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface CpuProfiler {
  resume(): Promise<void>;
  pause(): Promise<void>;
  save(file: string): Promise<void>;
}

export async function cpuProfiler(samplingMicros = 500): Promise<CpuProfiler> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: samplingMicros });
  const parts: CpuProfile[] = [];
  return {
    async resume() {
      await session.post("Profiler.start");
    },
    async pause() {
      const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: CpuProfile };
      parts.push(profile);
    },
    async save(file) {
      session.disconnect();
      await writeFile(file, JSON.stringify(stitch(parts)));
    },
  };
}

/** One profile from several: node ids are renumbered per part; the stretches follow one another. */
function stitch(parts: CpuProfile[]): CpuProfile {
  const nodes: ProfileNode[] = [];
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let offset = 0;
  let root: ProfileNode | undefined;
  for (const part of parts) {
    const maxId = Math.max(...part.nodes.map((node) => node.id));
    for (const node of part.nodes) {
      const renumbered = { ...node, id: node.id + offset, children: node.children?.map((id) => id + offset) };
      if (node.callFrame.functionName === "(root)") {
        if (!root) {
          root = renumbered;
          nodes.push(root);
        } else root.children = [...(root.children ?? []), ...(renumbered.children ?? [])];
        continue;
      }
      nodes.push(renumbered);
    }
    const rootOfPart = part.nodes.find((node) => node.callFrame.functionName === "(root)");
    samples.push(...part.samples.map((id) => (id === rootOfPart?.id ? (root as ProfileNode).id : id + offset)));
    timeDeltas.push(...part.timeDeltas);
    offset += maxId;
  }
  const first = parts[0];
  const elapsed = timeDeltas.reduce((sum, delta) => sum + delta, 0);
  return { nodes, samples, timeDeltas, startTime: first?.startTime ?? 0, endTime: (first?.startTime ?? 0) + elapsed };
}
