"""Measured characteristics of the DLT models the Gandiva and EDL papers schedule.

Shared by the Gandiva policy (packing, locality), Elastic-Tiresias (scaling curves) and the
workload generators (mini-batch rates for early feedback). Figures from the papers:

- Gandiva Table 1 (P40, PyTorch): GPU utilisation, time-slicing throughput (one GPU's worth
  of mini-batches/s, i.e. the solo rate) and packing gain of the eight §6.3 models.
- Gandiva §3.1-3.2: VGG16 keeps 60% of its speed on GPUs in different sockets and ResNet-50
  100% (intra-server locality, Fig. 1); spread over servers ResNet-50 slows by up to 47%,
  InceptionV3 by 30%, DeepSpeech by 5% (inter-server, Fig. 4).

Everything else is an assumption, chosen to be plausible and documented here: GPU memory
(only the P40's 24 GB bound matters for the packing check), the locality factors of models
the text gives no number for (0.9 intra, 0.85 inter), the §6.4 and EDL models' utilisation
and rates, and the strong-scaling Amdahl serial fractions (EDL Fig. 2: GPU efficiency drops
roughly linearly with parallelism under strong scaling; larger models communicate more).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulation.throughput import Amdahl, ThroughputModel


@dataclass(frozen=True, slots=True)
class DltModel:
    """One model: `gpu_util` and `packing_gain` are fractions (0.412 = +41.2%)."""

    name: str
    gpu_util: float
    minibatches_per_second: float
    packing_gain: float
    memory_gb: float
    intra_server_locality: float = 0.9  # speed kept on GPUs in different sockets
    inter_server_locality: float = 0.85  # speed kept when spread over servers
    serial_fraction: float = 0.05  # Amdahl: strong-scaling communication share
    category: str = "CV"


def _m(*args: object, **kwargs: object) -> DltModel:
    return DltModel(*args, **kwargs)  # type: ignore[arg-type]


# Gandiva Table 1, in the table's order (jobs 1-8 of §6.3).
GANDIVA_TABLE1: tuple[DltModel, ...] = (
    _m("vae", 0.087, 81.8, 4.12, 0.6, serial_fraction=0.02),
    _m("superresolution", 0.141, 40.3, 2.60, 1.0, serial_fraction=0.02),
    _m("rhn", 0.616, 10.1, 0.46, 3.0, category="NLP"),
    _m("scrnn", 0.668, 16.7, 0.39, 2.5, category="NLP"),
    _m("mi-lstm", 0.762, 22.2, 0.17, 3.0, category="NLP"),
    _m("lstm", 0.872, 63.8, -0.16, 4.0, category="NLP"),
    _m("resnet50", 0.940, 10.3, -0.13, 5.0, 1.0, 0.53, 0.04),
    _m("resnext50", 0.989, 83.6, -0.11, 6.0, 1.0, 0.6, 0.05),
)

# Gandiva Table 2 (§6.4): CV 10%, NLP 60%, Speech 30% of the production trace.
GANDIVA_TABLE2: tuple[DltModel, ...] = (
    _m("inception3", 0.90, 5.0, -0.10, 8.0, 0.95, 0.70, 0.04),
    _m("resnet50", 0.940, 10.3, -0.13, 5.0, 1.0, 0.53, 0.04),
    _m("alexnet", 0.85, 20.0, -0.05, 4.0, 0.8, 0.7, 0.15),
    _m("vgg16", 0.92, 4.0, -0.12, 10.0, 0.6, 0.5, 0.12),
    _m("bi-att-flow", 0.70, 3.0, 0.20, 6.0, category="NLP"),
    _m("language-model", 0.75, 15.0, 0.10, 4.0, category="NLP"),
    _m("gnmt", 0.80, 4.0, 0.05, 8.0, 0.85, 0.8, 0.08, "NLP"),
    _m("transformer", 0.85, 6.0, -0.05, 8.0, 0.85, 0.8, 0.06, "NLP"),
    _m("wavenet", 0.70, 2.0, 0.15, 6.0, category="Speech"),
    _m("deepspeech", 0.80, 1.5, 0.0, 10.0, 0.95, 0.95, 0.03, "Speech"),
)
GANDIVA_TABLE2_CATEGORY_SHARES = {"CV": 0.10, "NLP": 0.60, "Speech": 0.30}

# EDL §6.3: nine models of TensorFlow's official CNN benchmarks.
EDL_BENCHMARK_MODELS: tuple[DltModel, ...] = (
    _m("resnet50", 0.94, 10.3, -0.13, 5.0, 1.0, 0.53, 0.04),
    _m("resnet101", 0.95, 6.0, -0.13, 7.0, 1.0, 0.6, 0.05),
    _m("resnet152", 0.96, 4.2, -0.13, 9.0, 1.0, 0.65, 0.06),
    _m("inception3", 0.90, 5.0, -0.10, 8.0, 0.95, 0.70, 0.04),
    _m("inception4", 0.92, 3.0, -0.10, 10.0, 0.95, 0.75, 0.05),
    _m("vgg16", 0.92, 4.0, -0.12, 10.0, 0.6, 0.5, 0.12),
    _m("vgg19", 0.93, 3.5, -0.12, 11.0, 0.6, 0.5, 0.13),
    _m("alexnet", 0.85, 20.0, -0.05, 4.0, 0.8, 0.7, 0.15),
    _m("googlenet", 0.88, 12.0, -0.08, 4.0, 0.95, 0.8, 0.03),
)

MODELS: dict[str, DltModel] = {
    m.name: m for m in (*EDL_BENCHMARK_MODELS, *GANDIVA_TABLE2, *GANDIVA_TABLE1)
}
UNKNOWN = DltModel("generic", 0.9, 10.0, 0.0, 8.0, 1.0, 1.0, 0.0)


def model_info(name: str) -> DltModel:
    """The model's characteristics; unknown models never pack and are locality-insensitive."""
    return MODELS.get(name, UNKNOWN)


def strong_scaling_throughput() -> ThroughputModel:
    """Amdahl scaling curves for every model above (EDL's strong scaling, Fig. 2)."""
    return ThroughputModel(
        curves={name: Amdahl(m.serial_fraction) for name, m in MODELS.items()}
    )
