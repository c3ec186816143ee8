"""algo_tb_reader: a short PPO run's TensorBoard event file read by independent readers: protobuf's own parser
(Event / Summary / Value declared here from TensorFlow's event.proto / summary.proto field numbers) with every
record's masked CRC32C checked, and, where the tensorboard package is installed, TensorBoard's EventFileLoader.
Usage: python3 algo_tb_reader.py PATH/TO/adjoint   (exit 77: skipped when protobuf is not installed)"""
import glob, math, os, struct, subprocess, sys, tempfile

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError:
    print("algo_tb_reader: protobuf not installed: skipped")
    sys.exit(77)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    f = descriptor_pb2.FileDescriptorProto(name="adj_event.proto", package="adjtb", syntax="proto3")
    v = f.message_type.add(name="Value")
    v.field.add(name="tag", number=1, type=9, label=1)
    v.field.add(name="simple_value", number=2, type=2, label=1)
    s = f.message_type.add(name="Summary")
    s.field.add(name="value", number=1, type=11, label=3, type_name=".adjtb.Value")
    e = f.message_type.add(name="Event")
    e.field.add(name="wall_time", number=1, type=1, label=1)
    e.field.add(name="step", number=2, type=3, label=1)
    e.field.add(name="file_version", number=3, type=9, label=1)
    e.field.add(name="summary", number=5, type=11, label=1, type_name=".adjtb.Summary")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("adjtb.Event"))


def main():
    adj = sys.argv[1]
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run")
        r = subprocess.run([adj, "train", "configs/cartpole_ppo.yaml", "env.num_envs=4", "algo.horizon=8",
                            "env.episode_steps=10", "ppo.minibatches=2", "--max-iterations", "3", "--run-dir", run,
                            "--quiet"], capture_output=True, text=True)
        if r.returncode != 0:
            print("train failed:", r.stdout, r.stderr)
            return 1
        files = glob.glob(os.path.join(run, "events.out.tfevents.*"))
        if len(files) != 1:
            print("expected one event file, found", files)
            return 1
        data = open(files[0], "rb").read()
        Event = event_class()
        events, p = [], 0
        while p < len(data):
            (n,) = struct.unpack("<Q", data[p:p + 8])
            (c1,) = struct.unpack("<I", data[p + 8:p + 12])
            body = data[p + 12:p + 12 + n]
            (c2,) = struct.unpack("<I", data[p + 12 + n:p + 16 + n])
            if c1 != masked(crc32c(data[p:p + 8])) or c2 != masked(crc32c(body)):
                print("CRC mismatch in record", len(events))
                fails += 1
            ev = Event()
            ev.ParseFromString(body)
            events.append(ev)
            p += 16 + n
        if events[0].file_version != "brain.Event:2":
            print("first record is not the file_version event")
            fails += 1
        steps = [e.step for e in events[1:]]
        if steps != [1, 2, 3]:
            print("steps", steps)
            fails += 1
        tags = {v.tag: v.simple_value for v in events[-1].summary.value}
        for t in ("train/env_steps", "ppo/loss_value", "perf/env_steps_per_s"):
            if t not in tags or not math.isfinite(tags[t]):
                print("missing or non-finite tag", t, sorted(tags))
                fails += 1
        if tags.get("train/env_steps") != 3 * 4 * 8:
            print("train/env_steps", tags.get("train/env_steps"))
            fails += 1
        try:
            from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
            n = 0
            for ev in EventFileLoader(files[0]).Load():
                n += 1
            print("tensorboard EventFileLoader read", n, "events")
            if n != len(events):
                fails += 1
        except ImportError:
            print("tensorboard not installed: protobuf reader only")
    print("algo_tb_reader:", "all checks passed" if not fails else f"{fails} failures", f"({len(events)} records)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
