#!/usr/bin/env bash
# job.sh NAME QUEUE REPLICAS MIN_AVAILABLE: a Volcano Job of REPLICAS one-GPU simulated pods.
cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  minAvailable: $4
  schedulerName: volcano
  queue: $2
  tasks:
    - replicas: $3
      name: worker
      template:
        spec:
          containers:
            - name: worker
              image: busybox
              resources: {limits: {nvidia.com/gpu: 1}}
YAML
