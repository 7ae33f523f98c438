#!/usr/bin/env python3
"""Decodes a Perfetto trace with Perfetto's own published protobuf
definitions (the `perfetto` package on PyPI ships perfetto_trace_pb2) and
prints what the e2e tests check as JSON: the tracks, every slice with its
begin and end, its name, category, arguments and flows, the instants and
the counter values. Interned names are resolved per sequence as
trace_processor does; a slice end without a begin, a begin never ended or
an interned id never defined is listed under "errors".

Usage: perfetto_summary.py TRACE
"""
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def main(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    tracks, slices, instants, counters, errors = [], [], [], {}, []
    interned = {}  # sequence -> {kind: {iid: str}}
    open_slices = {}  # track -> stack of slices
    for p in trace.packet:
        seq = p.trusted_packet_sequence_id
        if p.sequence_flags & 1:  # SEQ_INCREMENTAL_STATE_CLEARED
            interned[seq] = {"names": {}, "cats": {}, "args": {}, "strs": {}}
        state = interned.setdefault(seq, {"names": {}, "cats": {}, "args": {}, "strs": {}})
        if p.HasField("interned_data"):
            d = p.interned_data
            for n in d.event_names:
                state["names"][n.iid] = n.name
            for n in d.event_categories:
                state["cats"][n.iid] = n.name
            for n in d.debug_annotation_names:
                state["args"][n.iid] = n.name
            for n in d.debug_annotation_string_values:
                state["strs"][n.iid] = n.str.decode()
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            t = {"uuid": d.uuid, "parent": d.parent_uuid, "name": d.name, "kind": "plain"}
            if d.HasField("process"):
                t.update(kind="process", pid=d.process.pid, process_name=d.process.process_name)
            if d.HasField("thread"):
                t.update(kind="thread", pid=d.thread.pid, tid=d.thread.tid, thread_name=d.thread.thread_name)
            if d.HasField("counter"):
                t.update(kind="counter", unit=d.counter.unit_name)
            tracks.append(t)
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        ts = p.timestamp

        def lookup(table, iid):
            if iid not in state[table]:
                errors.append("undefined %s iid %d at %d" % (table, iid, ts))
                return "?"
            return state[table][iid]

        if e.type in (1, 3):  # begin, instant
            args = {}
            for a in e.debug_annotations:
                key = lookup("args", a.name_iid)
                field = a.WhichOneof("value")
                if field == "string_value_iid":
                    args[key] = lookup("strs", a.string_value_iid)
                else:
                    args[key] = getattr(a, field)
            s = {
                "track": e.track_uuid,
                "name": lookup("names", e.name_iid),
                "cat": ",".join(lookup("cats", c) for c in e.category_iids),
                "ts": ts,
                "args": args,
                "flows_out": list(e.flow_ids),
                "flows_in": list(e.terminating_flow_ids),
            }
            if e.type == 1:
                open_slices.setdefault(e.track_uuid, []).append(s)
            else:
                instants.append(s)
        elif e.type == 2:  # end
            stack = open_slices.get(e.track_uuid)
            if not stack:
                errors.append("slice end without a begin on track %d at %d" % (e.track_uuid, ts))
                continue
            s = stack.pop()
            if ts < s["ts"]:
                errors.append("slice %s ends before it begins" % s["name"])
            s["end"] = ts
            slices.append(s)
        elif e.type == 4:  # counter
            counters.setdefault(str(e.track_uuid), []).append([ts, e.double_counter_value])
    for track, stack in open_slices.items():
        for s in stack:
            errors.append("slice %s on track %d never ends" % (s["name"], track))
    json.dump(
        {"tracks": tracks, "slices": slices, "instants": instants, "counters": counters, "errors": errors},
        sys.stdout,
    )


if __name__ == "__main__":
    main(sys.argv[1])
