"""Raw robot signals -> sensor-frame samples -> estimates, online or from a recording.

:mod:`~payload_estimator.pipeline.build` is the front door (settings -> estimator and stream);
:mod:`~payload_estimator.pipeline.stream` aligns, filters and differentiates the inputs and feeds the
estimator; :mod:`~payload_estimator.pipeline.driver` runs it turn by turn; the wrench and motion
sources are strategies in :mod:`~payload_estimator.pipeline.sources`.
"""
