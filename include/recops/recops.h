// recops/recops.h: the whole public C++ API.
#pragma once

#include "recops/context.h"
#include "recops/device.h"
#include "recops/dtype.h"
#include "recops/hstu.h"
#include "recops/jagged.h"
#include "recops/registry.h"
#include "recops/sparse_attn.h"
#include "recops/status.h"
#include "recops/tensor.h"
#include "recops/tensor_view.h"
