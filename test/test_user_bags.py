"""``replay`` on the rosbag2 recordings users have, and on broken ones.

Every bag here is written from scratch with rosbags' own ``Writer`` and
ROS 2 Jazzy message classes, the way ``ros2 bag record`` stores a user's
topics (no helper of this package is in the writing path; see
test_custom_robot.py): an xArm 7 holding the drill, simulated by MuJoCo, its
joint states and F/T sensor recorded on the robot's real topics, with

* no ground truth and no ``/robot_description`` (the package's URDF of the
  preset recognised from the topics is used, with a one-line warning);
* unrelated topics, some of a custom message type, some whose embedded
  definition rosbags cannot parse or whose type hash it does not reproduce;
* mcap and sqlite3, topics registered in any order, best-effort QoS, joint
  states and wrench at other rates;
* a recording split into several files (``--max-bag-duration``), listed in any
  order, or with no ``metadata.yaml`` at all (a recorder that was killed);
* a recording cut off, or still being written.

The fuzz sweep at the end breaks a small bag in many ways (truncated files,
flipped bytes, overwritten chunks, random bytes instead of a bag, a
``metadata.yaml`` that lies, messages that do not deserialize): ``replay``
either produces an estimate (the damage spared what it needs; warnings say
what was lost) or stops with exit status 2 and one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from payload_estimator.cli import main
from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload

EPOCH_NS = 1_731_000_000_000_000_000
JOINTS_TOPIC, WRENCH_TOPIC = "/xarm/joint_states", "/xarm/uf_ftsensor_raw_states"
GRIPPER_TYPE = "acme_msgs/msg/GripperStatus"
GRIPPER_MSG = "float64 width\nstring note\nint32[] codes\n"
PREFIX = "payload-estimator replay: "


# ------------------------------------------------------------------ recording


def _typestore():
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    ts = get_typestore(Stores.ROS2_JAZZY)
    ts.register(get_types_from_msg(GRIPPER_MSG, GRIPPER_TYPE))  # the user's own message
    return ts


def recording(run, *, joint_every: int = 1, wrench_every: int = 1, extras: bool = True) -> list[tuple]:
    """(record time s, topic, type, message) of a run as a recorder receives them, in record order.

    Joint states carry the arm joints and a gripper joint; the wrench is the F/T sensor's reading in
    its frame. ``extras`` adds the user's other topics: a custom gripper status and a text topic.
    """
    ts = _typestore()
    T = ts.types
    Time, Header = T["builtin_interfaces/msg/Time"], T["std_msgs/msg/Header"]
    Vector3, Wrench = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Wrench"]

    def header(t: float, frame: str):
        ns = EPOCH_NS + int(round(t * 1e9))
        return Header(stamp=Time(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=frame)

    names = [*run.joint_names, "xarm_gripper_drive_joint"]
    out = []
    for k in range(0, len(run.joint_t), joint_every):
        t = run.joint_t[k]
        msg = T["sensor_msgs/msg/JointState"](
            header=header(t, ""), name=names, position=np.r_[run.joint_q[k], 0.3],
            velocity=np.r_[run.joint_dq[k], 0.0], effort=np.r_[run.joint_effort[k], 0.0])
        out.append((t + 2e-4, JOINTS_TOPIC, "sensor_msgs/msg/JointState", msg))
    for k in range(0, len(run.wrench_t), wrench_every):
        t = run.wrench_t[k]
        f, tau = run.wrench_in_sensor[k, :3], run.wrench_in_sensor[k, 3:]
        msg = T["geometry_msgs/msg/WrenchStamped"](
            header=header(t, "ft_sensor"),
            wrench=Wrench(force=Vector3(x=f[0], y=f[1], z=f[2]), torque=Vector3(x=tau[0], y=tau[1], z=tau[2])))
        out.append((t + 3e-4, WRENCH_TOPIC, "geometry_msgs/msg/WrenchStamped", msg))
    if extras:
        for k in range(0, len(run.joint_t), 50):
            msg = T[GRIPPER_TYPE](width=0.04, note="holding", codes=np.array([3, 1], dtype=np.int32))
            out.append((run.joint_t[k] + 1e-4, "/gripper/status", GRIPPER_TYPE, msg))
        for k in range(0, len(run.joint_t), 400):
            out.append((run.joint_t[k] + 5e-5, "/operator/notes", "std_msgs/msg/String",
                        T["std_msgs/msg/String"](data="grasped the drill")))
    out.sort(key=lambda r: r[0])
    return out


def best_effort_qos():
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    never = QosTime(sec=0, nsec=0)
    return [Qos(QosHistory.KEEP_LAST, 100, QosReliability.BEST_EFFORT, QosDurability.VOLATILE, never, never,
                QosLiveliness.AUTOMATIC, never, False)]


def write_bag(path: Path, records: list[tuple], storage: str = "mcap", *, reverse_topics: bool = False,
              definitions: dict | None = None, qos: dict | None = None, close: bool = True,
              zstd_chunks: bool = False) -> Path:
    """A rosbag2 directory of ``records`` written by rosbags' Writer (``close=False``: a copy of the
    directory taken while the writer is still open, as a recording still being written; ``zstd_chunks``:
    MCAP chunks compressed, as ``ros2 bag record --storage-preset-profile zstd_fast`` writes them)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    ts = _typestore()
    topics: dict[str, str] = {}
    for _, topic, msgtype, _ in records:
        topics.setdefault(topic, msgtype)
    order = list(topics)[::-1] if reverse_topics else list(topics)
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    target = path if close else path.with_name(path.name + ".writing")
    writer = Writer(target, version=9, storage_plugin=plugin)
    if zstd_chunks:
        from rosbags.rosbag2.enums import CompressionFormat, CompressionMode

        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    writer.open()
    conns = {}
    for topic in order:
        kw: dict = {"typestore": ts}
        if definitions and topic in definitions:
            kw = dict(zip(("msgdef", "rihs01"), definitions[topic]))
        if qos and topic in qos:
            kw["offered_qos_profiles"] = qos[topic]
        conns[topic] = writer.add_connection(topic, topics[topic], **kw)
    for t, topic, msgtype, msg in records:
        data = msg if isinstance(msg, bytes) else ts.serialize_cdr(msg, msgtype)
        writer.write(conns[topic], EPOCH_NS + int(round(t * 1e9)), data)
    if close:
        writer.close()
        return path
    shutil.copytree(target, path)  # what another process sees now: no metadata.yaml yet
    writer.close()
    return path


def split_bag(path: Path, records: list[tuple], storage: str = "mcap", parts: int = 3, *,
              metadata: str = "listed") -> Path:
    """A recording split by duration into ``parts`` files ``<name>_<i>``, as ``--max-bag-duration``
    leaves it; ``metadata``: ``"listed"`` (metadata.yaml lists the files in order), ``"reversed"``
    (in reverse order), ``"none"`` (no metadata.yaml: the recorder was killed)."""
    path.mkdir()
    t = np.array([r[0] for r in records])
    edges = np.linspace(t[0], t[-1] + 1e-6, parts + 1)
    files, metas = [], []
    for i in range(parts):
        part = [r for r in records if edges[i] <= r[0] < edges[i + 1]]
        tmp = write_bag(path.parent / f".{path.name}_part{i}", part, storage)
        (src,) = [p for p in tmp.iterdir() if p.suffix in (".mcap", ".db3")]
        files.append(src.rename(path / f"{path.name}_{i}{src.suffix}").name)
        metas.append(yaml.safe_load((tmp / "metadata.yaml").read_text())["rosbag2_bagfile_information"])
        shutil.rmtree(tmp)
    if metadata == "none":
        return path
    info = dict(metas[0])
    order = files[::-1] if metadata == "reversed" else files
    info["relative_file_paths"] = order
    info["files"] = [{"path": f, "starting_time": m["starting_time"], "duration": m["duration"],
                      "message_count": m["message_count"]} for f, m in zip(files, metas)]
    info["message_count"] = sum(m["message_count"] for m in metas)
    counts: dict[str, int] = {}
    topic_md = {}
    for m in metas:
        for entry in m["topics_with_message_count"]:
            name = entry["topic_metadata"]["name"]
            topic_md[name] = entry["topic_metadata"]
            counts[name] = counts.get(name, 0) + entry["message_count"]
    info["topics_with_message_count"] = [{"topic_metadata": topic_md[n], "message_count": counts[n]} for n in counts]
    end = max(m["starting_time"]["nanoseconds_since_epoch"] + m["duration"]["nanoseconds"] for m in metas)
    info["duration"] = {"nanoseconds": end - info["starting_time"]["nanoseconds_since_epoch"]}
    (path / "metadata.yaml").write_text(yaml.safe_dump({"rosbag2_bagfile_information": info}, sort_keys=False))
    return path


def storage_file(bag: Path) -> Path:
    return next(p for p in sorted(bag.iterdir()) if p.suffix in (".mcap", ".db3"))


# ------------------------------------------------------------------- replaying


def replay(bag: Path, out: Path, *args: str) -> tuple[int, dict | None, list[str]]:
    """(exit status, JSON summary or None, stderr lines) of ``payload-estimator replay BAG --json``."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = main(["replay", str(bag), "--json", "--no-plot", "--out", str(out), *args])
    summary = json.loads(stdout.getvalue()) if rc == 0 else None
    return rc, summary, stderr.getvalue().splitlines()


@pytest.fixture(scope="module")
def run():
    return simulate(robot="xarm7", payload="drill", duration=3.0, seed=5)


@pytest.fixture(scope="module")
def shape() -> str:
    return format_shape_spec(get_payload("drill").envelope)


@pytest.fixture(scope="module")
def records(run):
    return recording(run)


def assert_recovers(summary: dict, run, mass_rel: float = 0.02, com_m: float = 0.005) -> None:
    truth = run.payload_params
    est = summary["estimate"]
    assert est["mass"] == pytest.approx(truth.mass, rel=mass_rel)
    assert np.linalg.norm(np.array(est["com"]) - truth.com) < com_m
    assert est["physically_consistent"]


# -------------------------------------------------------------- users' bags


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_users_bag_without_truth_or_description(run, records, shape, storage, tmp_path):
    bag = write_bag(tmp_path / "bag", records, storage)
    rc, s, err = replay(bag, tmp_path / "out", "--shape", shape)
    assert rc == 0
    assert s["robot"] == "xarm7" and s["settings"] == "xarm7 preset (from the topics recorded)"
    assert s["robot_description"] == "builtin" and s["truth"] is None and s["errors_percent"] is None
    (warning,) = err  # the one line that says which URDF is used
    assert warning.startswith(PREFIX + "warning: no /robot_description in the bag: using the package's URDF "
                              "of the xarm7 preset (from the topics recorded)")
    assert s["bag_warnings"] == [warning.removeprefix(PREFIX + "warning: ")]
    assert s["messages"] == {"joint_states": 3000, "wrench": 3000, "imu": 0} and s["accepted"] == s["messages"]
    assert_recovers(s, run)
    # the payload is followed by default: one payload held throughout, no change, no contact
    assert s["tracking"]["changes"] == 0 and s["tracking"]["contacts"] == 0
    # the user's own topics are listed with their types, never read
    from payload_estimator.io.bag import bag_info

    info = bag_info(bag)
    assert info.topics["/gripper/status"] == (GRIPPER_TYPE, 60)
    assert info.topics["/operator/notes"] == ("std_msgs/msg/String", 8)
    assert info.notes == () and len(info.files) == 1


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize("definition", ["unparseable", "other hash"])
@pytest.mark.slow
def test_other_topics_types_that_rosbags_cannot_load_do_not_matter(run, records, shape, storage, definition,
                                                                   tmp_path):
    """Before: rosbags' AnyReader loads every definition of the bag, so one it could not parse, or whose
    hash it computes differently, made the whole bag unreadable ("not a readable rosbag2")."""
    text = "this is ( not a message definition" if definition == "unparseable" else GRIPPER_MSG
    bag = write_bag(tmp_path / "bag", records, storage,
                    definitions={"/gripper/status": (text, "RIHS01_" + "1" * 64)})
    rc, s, _ = replay(bag, tmp_path / "out", "--shape", shape, "--robot", "xarm7")
    assert rc == 0 and s["accepted"]["wrench"] == 3000
    assert_recovers(s, run)


@pytest.mark.slow
def test_topic_order_qos_and_rates_are_the_users(run, shape, tmp_path):
    """Topics registered wrench first, best-effort QoS, joint states at 250 Hz and the wrench at 200 Hz."""
    recs = recording(run, joint_every=4, wrench_every=5)
    qos = best_effort_qos()
    bag = write_bag(tmp_path / "bag", recs, "mcap", reverse_topics=True,
                    qos={JOINTS_TOPIC: qos, WRENCH_TOPIC: qos})
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    names = [t["topic_metadata"]["name"] for t in meta["topics_with_message_count"]]
    assert names.index(WRENCH_TOPIC) < names.index(JOINTS_TOPIC)
    (offered,) = next(t for t in meta["topics_with_message_count"]
                      if t["topic_metadata"]["name"] == JOINTS_TOPIC)["topic_metadata"]["offered_qos_profiles"]
    assert offered["reliability"] == "best_effort"
    rc, s, _ = replay(bag, tmp_path / "out", "--shape", shape)
    assert rc == 0
    assert s["messages"] == {"joint_states": 750, "wrench": 600, "imu": 0} and s["accepted"] == s["messages"]
    assert_recovers(s, run, mass_rel=0.03, com_m=0.01)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.slow
def test_a_split_recording_reads_as_one(records, shape, storage, tmp_path):
    """Three files, listed in order, in reverse order, or not at all: the same messages in the same
    order as the whole recording (hence the same estimate), and replay says what it read."""
    from payload_estimator.io.bag import read_bag
    from payload_estimator.settings import settings_for_robot

    settings = settings_for_robot("xarm7")

    def stream(bag: Path) -> list[tuple]:
        return [(m.kind, m.record_time, m.msg.header.stamp.nanosec) for m in read_bag(bag, settings)]

    whole = stream(write_bag(tmp_path / "whole", records, storage))
    assert len(whole) == 6000
    suffix = ".mcap" if storage == "mcap" else ".db3"
    for metadata in ("listed", "reversed", "none"):
        bag = split_bag(tmp_path / f"split_{metadata}", records, storage, parts=3, metadata=metadata)
        assert stream(bag) == whole, metadata
    rc, s, err = replay(bag, tmp_path / "o", "--shape", shape)
    assert rc == 0, err
    assert s["bag_files"] == [f"split_none_{i}{suffix}" for i in range(3)]
    assert s["messages"] == {"joint_states": 3000, "wrench": 3000, "imu": 0} and s["accepted"] == s["messages"]
    assert s["bag_warnings"][0] == ("no metadata.yaml: reading the 3 storage file(s) found (a recording cut off "
                                    "or still being written?)")


def test_a_recording_cut_off_keeps_what_can_be_read(run, records, shape, tmp_path):
    """The recorder was killed during the last of three files: no metadata.yaml, the last MCAP file
    without its footer. The first two files and the first half of the last are replayed, and the
    warnings say where the cut file stops."""
    bag = split_bag(tmp_path / "killed", records, "mcap", parts=3, metadata="none")
    last = bag / "killed_2.mcap"
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])
    rc, s, err = replay(bag, tmp_path / "out", "--shape", shape)
    assert rc == 0
    assert s["bag_files"] == ["killed_0.mcap", "killed_1.mcap", "killed_2.mcap"]
    (cut,) = [w for w in s["bag_warnings"] if w.startswith("killed_2.mcap: ")]
    assert cut.startswith("killed_2.mcap: cut off: no MCAP footer (the recording was interrupted or is still "
                          "being written): read as far as it goes, ")
    assert all(line.startswith(PREFIX + "warning: ") for line in err)
    assert not any("mcap recover" in line for line in err)
    assert 2300 < s["messages"]["joint_states"] < 2700  # two thirds of 3000, and about half of the last third
    assert_recovers(s, run, mass_rel=0.03, com_m=0.01)


def _cut(bag: Path, fraction: float) -> Path:
    f = storage_file(bag)
    data = f.read_bytes()
    f.write_bytes(data[: int(len(data) * fraction)])
    return f


@pytest.mark.parametrize("fraction", [0.5, 0.9])
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_truncated_bag_is_read_up_to_the_cut(run, records, shape, storage, fraction, tmp_path):
    """The storage file cut at half or 90 % of its size (the recorder killed, a copy taken too early):
    every message before the cut is replayed, one warning line says where the file stops, and the
    estimate is made of what was read. Before, both storages were refused whole (and the MCAP error
    pointed to a command-line tool that is not installed)."""
    bag = write_bag(tmp_path / "bag", records, storage)
    f = _cut(bag, fraction)
    rc, s, err = replay(bag, tmp_path / "out", "--shape", shape)
    assert rc == 0, err
    (cut,) = [w for w in s["bag_warnings"] if w.startswith(f"{f.name}: cut off: ")]
    n_read = int(cut.split("read as far as it goes, ")[1].split(" message(s)")[0])
    t_stop = float(cut.split("up to ")[1].split(" s into the recording")[0])
    n_inputs = s["messages"]["joint_states"] + s["messages"]["wrench"]
    # what is read is what lies before the cut: about that fraction of the 6000 input messages (the
    # rest of the file holds the other topics, the indexes, the part of a chunk or page cut through)
    assert fraction - 0.12 < n_inputs / 6000 < fraction + 0.06
    assert n_inputs <= n_read <= n_inputs + 70  # and the user's other topics (60 + 8 in all)
    assert abs(t_stop - 3.0 * n_inputs / 6000) < 0.02  # the time of the last message read
    # the messages read are the first ones, in record order, each as it was recorded
    from payload_estimator.io.bag import read_bag
    from payload_estimator.settings import settings_for_robot

    got = [(m.kind, m.record_time, (m.msg.header.stamp.sec, m.msg.header.stamp.nanosec))
           for m in read_bag(bag, settings_for_robot("xarm7"))]
    whole = [(r[1], (r[3].header.stamp.sec, r[3].header.stamp.nanosec)) for r in records
             if r[1] in (JOINTS_TOPIC, WRENCH_TOPIC)]
    assert len(got) == n_inputs
    stamps = [stamp for _, _, stamp in got]
    assert stamps == sorted(stamps) and set(stamps) <= {stamp for _, stamp in whole}
    # all of them up to the last page of the cut (SQLite fills a page from its end: the part of the
    # page cut through that is left holds its latest rows)
    first_lost = next(k for k, (_, stamp) in enumerate(whole) if k >= len(stamps) or stamps[k] != stamp)
    assert first_lost > n_inputs - 40
    assert [line.removeprefix(PREFIX + "warning: ") for line in err if "warning: " in line] == s["bag_warnings"]
    assert not any("mcap recover" in line or "Traceback" in line for line in err)
    assert_recovers(s, run, mass_rel=0.04, com_m=0.012)


def test_an_mcap_file_of_compressed_chunks_cut_off_is_read_up_to_the_cut(run, records, shape, tmp_path):
    """zstd chunks: the complete chunks, and what the chunk cut through holds, are read."""
    bag = write_bag(tmp_path / "bag", records, "mcap", zstd_chunks=True)
    f = _cut(bag, 0.6)
    rc, s, err = replay(bag, tmp_path / "out", "--shape", shape)
    assert rc == 0, err
    assert any(w.startswith(f"{f.name}: cut off: no MCAP footer") for w in s["bag_warnings"])
    assert 1000 < s["messages"]["joint_states"] < 3000
    assert_recovers(s, run, mass_rel=0.04, com_m=0.012)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_bag_cut_before_its_first_message_is_one_clear_line(records, storage, tmp_path):
    bag = write_bag(tmp_path / "bag", records, storage)
    f = storage_file(bag)
    f.write_bytes(f.read_bytes()[:300])
    rc, _, err = replay(bag, tmp_path / "out")
    assert rc == 2 and len(err) == 1
    assert err[0].startswith(f"{PREFIX}error: {f}: not a readable rosbag2: cut off before its first ")
    assert "mcap recover" not in err[0]


def test_a_single_file_cut_off_in_its_index_loses_nothing(run, records, shape, tmp_path):
    """The last 100 bytes (the MCAP footer and part of the summary) lost: every message is read."""
    bag = write_bag(tmp_path / "bag", records, "mcap")
    f = storage_file(bag)
    f.write_bytes(f.read_bytes()[:-100])
    rc, s, err = replay(bag, tmp_path / "out", "--shape", shape)
    assert rc == 0
    assert s["bag_warnings"][0] == ("bag.mcap: cut off: no MCAP footer (the recording was interrupted or is still "
                                    "being written): read as far as it goes, 6068 message(s), up to 2.999 s into "
                                    "the recording")
    assert s["messages"] == {"joint_states": 3000, "wrench": 3000, "imu": 0}
    assert_recovers(s, run)


def test_a_sqlite3_file_damaged_at_its_end_is_read_up_to_the_damage(run, records, shape, tmp_path):
    """The last 100 bytes of the database lost: what SQLite still returns is replayed, and a warning
    says what was lost (a message cut short, or the end of the file)."""
    bag = write_bag(tmp_path / "bag", records, "sqlite3")
    f = storage_file(bag)
    f.write_bytes(f.read_bytes()[:-100])
    rc, s, _ = replay(bag, tmp_path / "out", "--shape", shape)
    assert rc == 0
    lost = [w for w in s["bag_warnings"] if "reading stopped" in w or "do not deserialize" in w or "cut off" in w]
    assert len(lost) == 1 and (lost[0].startswith("bag.db3: reading stopped after ")
                               or lost[0].startswith("bag.db3: cut off: ")
                               or lost[0].endswith("message(s) on /xarm/joint_states do not deserialize: skipped"))
    assert 0 < 6000 - s["messages"]["joint_states"] - s["messages"]["wrench"] < 30
    assert_recovers(s, run)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_recording_still_being_written(run, records, shape, storage, tmp_path):
    """The directory copied while rosbags' Writer is still open: no metadata.yaml yet, an MCAP file
    without its footer (its chunks written so far are read), an SQLite database before its first commit."""
    bag = write_bag(tmp_path / "live", records, storage, close=False)
    assert not (bag / "metadata.yaml").exists()
    rc, s, err = replay(bag, tmp_path / "out", "--shape", shape)
    if storage == "mcap":
        assert rc == 0
        assert any(w.startswith("live.writing.mcap: cut off: no MCAP footer") for w in s["bag_warnings"])
        assert 0 < s["messages"]["joint_states"] < 3000
    else:
        assert rc == 2 and len(err) == 1 and err[0].startswith(PREFIX + "error: ")
        assert "no topics recorded (yet: a recording still being written?)" in err[0]


def test_the_simulator_nodes_truth_topic_is_the_truth(run, records, shape, tmp_path):
    """A ``ros2 bag record`` of sim_demo.launch.py holds the truth on /payload_sim/truth."""
    from payload_estimator.io.bag import SIM_NODE_TRUTH_TOPIC, bag_ground_truth

    T = _typestore().types
    p = run.payload_params
    (ixx, ixy, ixz), (_, iyy, iyz), (_, _, izz) = p.inertia_com
    truth = T["geometry_msgs/msg/InertiaStamped"](
        header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=EPOCH_NS // 10**9, nanosec=0),
                                        frame_id="ft_sensor"),
        inertia=T["geometry_msgs/msg/Inertia"](m=p.mass, com=T["geometry_msgs/msg/Vector3"](x=p.com[0], y=p.com[1],
                                                                                           z=p.com[2]),
                                               ixx=ixx, ixy=ixy, ixz=ixz, iyy=iyy, iyz=iyz, izz=izz))
    bag = write_bag(tmp_path / "bag", [(0.0, SIM_NODE_TRUTH_TOPIC, "geometry_msgs/msg/InertiaStamped", truth),
                                       *records])
    got = bag_ground_truth(bag)
    assert got is not None and got.topic == SIM_NODE_TRUTH_TOPIC and got.frame_id == "ft_sensor"
    np.testing.assert_allclose(got.params.phi, run.payload_phi, rtol=1e-12, atol=1e-15)
    rc, s, _ = replay(bag, tmp_path / "out", "--shape", shape)
    assert rc == 0 and s["errors_percent"]["mass"] < 2.0 and s["errors_percent"]["com"] < 5.0


# ------------------------------------------------------------------- fuzzing


@pytest.fixture(scope="module")
def fuzz_bags(tmp_path_factory):
    """A short recording (0.6 s, wrench at 250 Hz) in both storages, and one with some messages damaged."""
    root = tmp_path_factory.mktemp("fuzz")
    short = simulate(robot="xarm7", payload="drill", duration=0.6, seed=9, wrench_rate_hz=250.0)
    recs = recording(short)
    bags = {s: write_bag(root / s, recs, s) for s in ("mcap", "sqlite3")}
    rng = np.random.default_rng(0)
    spoiled = [(t, topic, typ, rng.bytes(int(rng.integers(0, 40))) if k % 7 == 3 else msg)
               for k, (t, topic, typ, msg) in enumerate(recs)]
    bags["undecodable"] = write_bag(root / "undecodable", spoiled, "mcap")
    bags["all_wrench_undecodable"] = write_bag(
        root / "all_wrench_undecodable",
        [(t, topic, typ, b"\x00\x01" if topic == WRENCH_TOPIC else msg) for t, topic, typ, msg in recs], "sqlite3")
    return bags


def _meta(bag: Path) -> dict:
    return yaml.safe_load((bag / "metadata.yaml").read_text())


def _lie(bag: Path, change) -> None:
    doc = _meta(bag)
    change(doc["rosbag2_bagfile_information"])
    (bag / "metadata.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def _truncate(at: float):
    def damage(bag: Path) -> None:
        f = storage_file(bag)
        data = f.read_bytes()
        n = int(len(data) * at) if at >= 0 else len(data) + int(at)
        f.write_bytes(data[:n])
    return damage


def _flip(seed: int, n: int = 24):
    def damage(bag: Path) -> None:
        f = storage_file(bag)
        data = bytearray(f.read_bytes())
        rng = np.random.default_rng(seed)
        for i in rng.integers(0, len(data), n):
            data[i] ^= int(rng.integers(1, 256))
        f.write_bytes(bytes(data))
    return damage


def _overwrite(at: float, size: int = 512):
    def damage(bag: Path) -> None:
        f = storage_file(bag)
        data = bytearray(f.read_bytes())
        start = int(len(data) * at)
        data[start:start + size] = np.random.default_rng(int(at * 1000)).bytes(len(data[start:start + size]))
        f.write_bytes(bytes(data))
    return damage


def _random_storage(size: int):
    def damage(bag: Path) -> None:
        storage_file(bag).write_bytes(np.random.default_rng(size).bytes(size))
    return damage


def _random_metadata(text: bytes):
    def damage(bag: Path) -> None:
        (bag / "metadata.yaml").write_bytes(text)
    return damage


def _no_metadata(bag: Path) -> None:
    (bag / "metadata.yaml").unlink()


def _set(key: str, value):
    return lambda bag: _lie(bag, lambda m: m.__setitem__(key, value))


def _types_lie(m: dict) -> None:
    for t in m["topics_with_message_count"]:
        t["topic_metadata"]["type"] = "std_msgs/msg/String"


def _qos_lie(m: dict) -> None:
    for t in m["topics_with_message_count"]:
        t["topic_metadata"]["offered_qos_profiles"] = [{"history": "keep_all", "reliability": "best_effort"}]


def _file_renamed(bag: Path) -> None:
    f = storage_file(bag)
    f.rename(f.with_name("renamed" + f.suffix))


def _file_moved_away(bag: Path) -> None:
    f = storage_file(bag)
    f.rename(f.with_name(f.name + ".bak"))


STORAGE_DAMAGE = {
    **{f"truncated_{int(a * 1000)}permille": _truncate(a) for a in (0.0, 0.002, 0.05, 0.3, 0.6, 0.9, 0.99)},
    "truncated_by_1_byte": _truncate(-1),
    "truncated_by_37_bytes": _truncate(-37),
    "truncated_by_4k": _truncate(-4096),
    **{f"flipped_bytes_seed{s}": _flip(s) for s in range(6)},
    **{f"overwritten_chunk_at_{int(a * 100)}pc": _overwrite(a) for a in (0.02, 0.3, 0.7, 0.97)},
    **{f"random_storage_{n}_bytes": _random_storage(n) for n in (1, 64, 5000)},
}
METADATA_DAMAGE = {
    "no_metadata": _no_metadata,
    "metadata_random_bytes": _random_metadata(np.random.default_rng(1).bytes(300)),
    "metadata_not_yaml": _random_metadata(b"rosbag2_bagfile_information: [unclosed\n  - {"),
    "metadata_a_list": _random_metadata(b"- 1\n- 2\n"),
    "metadata_empty": _random_metadata(b""),
    "metadata_lies_storage": lambda bag: _lie(bag, lambda m: m.__setitem__(
        "storage_identifier", "sqlite3" if m["storage_identifier"] == "mcap" else "mcap")),
    "metadata_lies_files": _set("relative_file_paths", ["rec_0.mcap", "rec_1.mcap"]),
    "metadata_files_not_a_list": _set("relative_file_paths", "everything"),
    "metadata_lies_types": lambda bag: _lie(bag, _types_lie),
    "metadata_lies_qos": lambda bag: _lie(bag, _qos_lie),
    "metadata_lies_counts": _set("message_count", 10**12),
    "metadata_lies_version": _set("version", 99),
    "metadata_lies_duration": _set("duration", {"nanoseconds": -5}),
    "metadata_lies_start": _set("starting_time", "yesterday"),
    "metadata_lies_compression_file": lambda bag: _lie(bag, lambda m: m.update(
        compression_mode="file", compression_format="zstd")),
    "metadata_lies_compression_message": lambda bag: _lie(bag, lambda m: m.update(
        compression_mode="message", compression_format="zstd")),
    "metadata_unknown_compression": lambda bag: _lie(bag, lambda m: m.update(
        compression_mode="file", compression_format="brotli")),
    "storage_file_renamed": _file_renamed,
    "storage_file_moved_away": _file_moved_away,
}
FUZZ_CASES = ([(f"{s}-{name}", s, name) for s in ("mcap", "sqlite3") for name in STORAGE_DAMAGE]
              + [(f"{s}-{name}", s, name) for s in ("mcap", "sqlite3") for name in METADATA_DAMAGE]
              + [(name, name, None) for name in ("undecodable", "all_wrench_undecodable")]
              + [(f"not_a_bag-{n}", None, n) for n in ("random.mcap", "random.db3", "random.bag", "empty_dir",
                                                        "dir_of_random_files")])


def _not_a_bag(root: Path, name: str) -> Path:
    rng = np.random.default_rng(len(name))
    if name == "empty_dir":
        (root / name).mkdir()
    elif name == "dir_of_random_files":
        (root / name).mkdir()
        (root / name / "metadata.yaml").write_bytes(rng.bytes(200))
        (root / name / "x_0.mcap").write_bytes(rng.bytes(2000))
        (root / name / "x_0.db3").write_bytes(rng.bytes(2000))
    else:
        (root / name).write_bytes(rng.bytes(3000))
    return root / name


@pytest.mark.parametrize("case, base, damage", FUZZ_CASES, ids=[c[0] for c in FUZZ_CASES])
def test_a_damaged_bag_gives_an_estimate_or_one_line(fuzz_bags, tmp_path, case, base, damage):
    if base is None:
        bag = _not_a_bag(tmp_path, damage)
    else:
        bag = tmp_path / "bag"
        shutil.copytree(fuzz_bags[base], bag)
        if damage is not None:
            (STORAGE_DAMAGE | METADATA_DAMAGE)[damage](bag)
    rc, s, err = replay(bag, tmp_path / "out", "--robot", "xarm7", "--estimator", "ols")
    assert rc in (0, 2), err
    assert all(line.startswith(PREFIX) for line in err), err  # no traceback, nothing unprefixed
    if rc == 2:
        assert len(err) == 1 and err[0].startswith(PREFIX + "error: "), err
    else:
        mass = s["estimate"]["mass"]  # null when what is left does not determine it, and said so
        assert (mass is None) == (s["estimate"]["identification"]["mass"] == "not identified")
        assert (mass is None or np.isfinite(mass)) and s["messages"]["wrench"] > 0
        assert [line.removeprefix(PREFIX + "warning: ") for line in err] == s["bag_warnings"]
    if case == "undecodable":  # every 7th message is random bytes: skipped, counted, said
        assert rc == 0
        assert any(w.endswith("do not deserialize: skipped") and WRENCH_TOPIC in w for w in s["bag_warnings"])
    if case == "all_wrench_undecodable":
        assert rc == 2 and f"no readable messages on {WRENCH_TOPIC}" in err[0] and "do not deserialize" in err[0]
    if case == "mcap-overwritten_chunk_at_2pc":  # rosbags drops the rest of the damaged chunk without a word
        assert rc == 2 and "591 of 600 message(s) on /xarm/joint_states could not be read" in err[0]
    if case in ("mcap-no_metadata", "sqlite3-no_metadata", "mcap-metadata_lies_files", "mcap-storage_file_renamed"):
        assert rc == 0 and s["messages"] == {"joint_states": 600, "wrench": 150, "imu": 0}
