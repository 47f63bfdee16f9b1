# backends/vulkan/shaders/<name>.comp → ${GEN_DIR}/shaders/<name>.spv.inc (glslc -mfmt=c: a
# uint32_t initializer, included by vk_shaders.cpp). Vulkan 1.1 SPIR-V.
file(GLOB BERTRT_SHADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/backends/vulkan/shaders/*.comp)
set(BERTRT_SPIRV)
foreach(src ${BERTRT_SHADERS})
  get_filename_component(name ${src} NAME_WE)
  set(out ${GEN_DIR}/shaders/${name}.spv.inc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GEN_DIR}/shaders
    COMMAND ${GLSLC} --target-env=vulkan1.1 -O -mfmt=c -I${CMAKE_SOURCE_DIR}/backends/vulkan/shaders
            ${src} -o ${out}
    DEPENDS ${src} ${CMAKE_SOURCE_DIR}/backends/vulkan/shaders/push_constants.h
            ${CMAKE_SOURCE_DIR}/backends/vulkan/shaders/util.glsl
    COMMENT "glslc ${name}.comp")
  list(APPEND BERTRT_SPIRV ${out})
endforeach()
add_custom_target(bertrt_shaders DEPENDS ${BERTRT_SPIRV})
