"""Incident recordings: every refresh of a cluster kept as a compact frame, replayed read-only.

`format` is the file format (`gpuq.recording/v1`, pure), `writer` appends frames
(`RecordingWriter`), `reader` opens a directory of recordings (`Recording`) and serves one
cluster's frames at a movable cursor as a read-only backend (`ReplayBackend`).
"""

from gpuq.backends.recording.format import DEFAULT_KEYFRAME_EVERY, FORMAT, SUFFIX
from gpuq.backends.recording.reader import READ_ONLY_REASON, Recording, ReplayBackend
from gpuq.backends.recording.writer import RecordingError, RecordingWriter, recording_path

__all__ = [
    "DEFAULT_KEYFRAME_EVERY",
    "FORMAT",
    "READ_ONLY_REASON",
    "SUFFIX",
    "Recording",
    "RecordingError",
    "RecordingWriter",
    "ReplayBackend",
    "recording_path",
]
