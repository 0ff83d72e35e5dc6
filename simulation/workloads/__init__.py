"""Workloads: traces in any supported format, cluster specs, inference load, generators.

Everything here is pure Python (no Django): the CLI, Celery tasks and the upload form all
call these functions. User mistakes raise ``simulation.errors.InputError`` naming the file,
line and field.
"""

from simulation.workloads._rows import LoadedWorkload
from simulation.workloads.canonical import (
    CANONICAL_COLUMNS,
    canonical_csv_text,
    write_canonical_csv,
)
from simulation.workloads.cluster_spec import (
    DEFAULT_GPU_TYPES,
    cluster_spec_from_dict,
    load_cluster_spec,
    parse_cluster_spec_text,
)
from simulation.workloads.formats import FORMATS, detect_format, load_trace, parse_trace_text
from simulation.workloads.generator import GeneratorSpec, concern_rngs, generate_workload
from simulation.workloads.inference_load import (
    generate_inference_load,
    inference_load_csv_text,
    load_inference_load,
    parse_inference_load_text,
    write_inference_load_csv,
)

__all__ = [
    "CANONICAL_COLUMNS",
    "DEFAULT_GPU_TYPES",
    "FORMATS",
    "GeneratorSpec",
    "LoadedWorkload",
    "canonical_csv_text",
    "cluster_spec_from_dict",
    "concern_rngs",
    "detect_format",
    "generate_inference_load",
    "generate_workload",
    "inference_load_csv_text",
    "load_cluster_spec",
    "load_inference_load",
    "load_trace",
    "parse_cluster_spec_text",
    "parse_inference_load_text",
    "parse_trace_text",
    "write_canonical_csv",
    "write_inference_load_csv",
]
